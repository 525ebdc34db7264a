"""Remote images in Chromium: opening a thread contacts no image host; a reviewer who presses an image's button
(with the keyboard here) opens that one image in a new tab, without the thread's address; a trusted host's images
load inline under the CSP.

Every request to another host than the live server, from the thread or from a tab it opens, is recorded and
aborted: nothing leaves the machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Source
from tests.browser.conftest import Problems, sign_in
from tests.test_remote_media_pages import TRUSTED, TRUSTED_HOST, image_thread, trust_image_hosts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IMAGE_PART = "https://evil.example/image-part.png?thread=seen"
MARKDOWN_IMAGE = "https://markdown.example/beacon.gif"


@dataclass
class Request:
    kind: str
    url: str
    referer: str | None


@dataclass
class Elsewhere:
    """Requests to other hosts, from every tab of the browser context."""

    requests: list[Request] = field(default_factory=list)

    def urls(self) -> list[tuple[str, str]]:
        return [(request.kind, request.url) for request in self.requests]


@pytest.fixture
def elsewhere(page: Any, live_server: Any) -> Iterator[Elsewhere]:
    found = Elsewhere()
    others = re.compile(r"^(?!" + re.escape(live_server.url) + r"/)")

    def record_and_abort(route: Any) -> None:
        request = route.request
        found.requests.append(Request(request.resource_type, request.url, request.header_value("referer")))
        route.abort()

    # On the context, not the page: a tab the thread opens is routed too.
    page.context.route(others, record_and_abort)
    yield found


def test_a_thread_loads_no_remote_image_until_a_reviewer_opens_one_with_the_keyboard(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems, elsewhere: Elsewhere
) -> None:
    answer = f"The blot: ![lane 3]({MARKDOWN_IMAGE})"
    conversation = image_thread(source, urls=[IMAGE_PART], answer=answer)
    thread = live_server.url + conversation.get_absolute_url()
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    # Images load lazily, after the load event: every part of the thread is scrolled past and the network let settle.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_load_state("networkidle")
    page.evaluate("window.scrollTo(0, 0)")

    assert elsewhere.urls() == []
    assert page.locator("img[src^='http']").count() == 0
    part_button = page.get_by_role("button", name="Image from evil.example — click to load (opens in a new tab)")
    assert part_button.get_attribute("title") == IMAGE_PART
    assert page.get_by_text(IMAGE_PART, exact=True).is_visible()

    # Enter on the focused button: the image opens in a new tab, and only then does its host hear of it.
    part_button.focus()
    with page.context.expect_page() as opened:
        page.keyboard.press("Enter")
    opened.value.wait_for_load_state()
    assert elsewhere.requests == [Request("document", IMAGE_PART, None)]

    # Space on the Markdown image's button, reached by tabbing from the first one.
    page.bring_to_front()
    markdown_button = page.get_by_role(
        "button", name="Image from markdown.example — click to load (opens in a new tab)"
    )
    for _ in range(40):
        page.keyboard.press("Tab")
        if markdown_button.evaluate("(button) => button === document.activeElement"):
            break
    else:
        pytest.fail("tabbing never reached the Markdown image's button")
    with page.context.expect_page() as opened:
        page.keyboard.press(" ")
    opened.value.wait_for_load_state()
    assert elsewhere.requests[1:] == [Request("document", MARKDOWN_IMAGE, None)]

    # The thread itself stayed where it was and still shows no remote image.
    assert page.url == thread
    assert page.locator("img[src^='http']").count() == 0


def test_a_trusted_hosts_image_loads_inline_within_the_csp(
    page: Any,
    live_server: Any,
    reviewer: User,
    source: Source,
    problems: Problems,
    elsewhere: Elsewhere,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trust_image_hosts(settings, monkeypatch, TRUSTED_HOST)
    conversation = image_thread(source, urls=[TRUSTED, IMAGE_PART])
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.locator(f"img[src='{TRUSTED}']").scroll_into_view_if_needed()
    page.wait_for_function("(url) => document.querySelector(`img[src='${url}']`).complete", arg=TRUSTED)

    # Asked for by the page as an image (and aborted here); the CSP let it through (`problems`: no violation).
    assert elsewhere.urls() == [("image", TRUSTED)]
    assert elsewhere.requests[0].referer is None
    assert page.get_by_role("button", name=re.compile("^Image from evil.example")).is_visible()
