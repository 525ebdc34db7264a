"""A reviewer's day in a real browser: sign in, filter and search, read a thread, follow tool calls, open an
injected protocol, switch branches, give feedback in place; a hostile thread runs no script; the main pages
have no serious or critical accessibility violation."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import ExportJob, JobState, Message, Source
from tests import factories
from tests.browser.conftest import Problems, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def data(source: Source) -> dict[str, Any]:
    factories.make_labels("helpful", "hallucination")
    return {
        "plain": factories.make_conversation(source, title="Gel bands", topic="thermocycler", with_tools=False),
        "tools": factories.make_conversation(source, title="Primer search", topic="nitrocellulose"),
        "record": factories.make_record_qa(source),
        "branched": factories.make_conversation(source, title="Branchy", n_messages=5, branches=2, with_tools=False),
    }


def test_sign_in_then_filter_and_search(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems
) -> None:
    sign_in(page, live_server.url, "rita")
    page.get_by_role("heading", name="Dashboard").wait_for()
    page.get_by_role("link", name="Conversations", exact=True).click()
    page.get_by_text("More filters").click()  # the filters beyond the four most used are folded
    page.get_by_label("Tool calls").select_option("true")
    page.get_by_label("Search message text").fill("nitrocellulose")
    page.get_by_role("button", name="Apply filters").click()
    page.wait_for_url(re.compile(r"q=nitrocellulose"))
    rows = page.locator("table.conversations tbody tr")
    assert rows.count() == 1
    assert "Primer search" in rows.first.inner_text()
    # The filters stay in the link to the thread and come back from it.
    rows.first.get_by_role("link").click()
    page.get_by_role("heading", name="Primer search").wait_for()
    page.get_by_role("link", name=re.compile("Conversations \\(filtered\\)")).click()
    assert page.get_by_label("Search message text").input_value() == "nitrocellulose"


def test_follow_a_tool_call_to_its_result_and_back(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems
) -> None:
    conversation = data["tools"]
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    call = page.locator(".tool-call").first
    call.get_by_text("airalogy_search").wait_for()
    call.get_by_role("link", name=re.compile("go to the result")).click()
    result = Message.objects.filter(conversation=conversation, role="tool").order_by("depth").first()
    assert result is not None
    page.wait_for_url(re.compile(f"#m-{result.pk}$"))
    assert page.evaluate("document.activeElement.id") == f"m-{result.pk}"
    page.locator(f"#m-{result.pk}").get_by_role("link", name=re.compile("back to the call")).click()
    page.wait_for_url(re.compile(r"#call-\d+$"))


def test_open_an_injected_protocol(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems
) -> None:
    conversation = data["record"]
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    injection = page.locator(".injection.kind-protocol").filter(has=page.locator("details.payload")).first
    body = injection.locator(".protocol-body, table.record-data").first
    assert not body.is_visible()
    injection.get_by_text("Show the protocol").click()
    body.wait_for(state="visible")
    assert body.inner_text().strip()


def test_switch_a_branch(page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems) -> None:
    conversation = data["branched"]
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    switcher = page.locator(".branch-switcher").first
    assert switcher.locator(".branch-position").inner_text() == "3 of 3"
    assert page.get_by_text("Alternative answer 2.").is_visible()
    switcher.get_by_role("link", name="Previous branch").click()
    page.wait_for_url(re.compile(r"\?at=\d+"))
    assert page.locator(".branch-switcher .branch-position").first.inner_text() == "2 of 3"
    assert page.get_by_text("Alternative answer 1.").is_visible()
    assert page.get_by_text("Alternative answer 2.").count() == 0
    page.get_by_role("button", name="Make this branch the active one").click()
    page.get_by_text("This branch is now the active one.").wait_for()
    assert page.locator(".branch-switcher .branch-position").first.inner_text() == "2 of 3"


def test_feedback_without_a_reload_then_after_one(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems
) -> None:
    conversation = data["tools"]
    answer = factories.last_assistant(conversation)
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.evaluate("window.__notReloaded = true")
    block = page.locator(f"#fb-{answer.pk}")
    block.get_by_text("Give feedback").click()
    block.get_by_label("Thumbs up").check()
    block.get_by_label("helpful").check()
    block.get_by_label("Comment").fill("Grounded in the search result.")
    block.get_by_role("button", name="Save feedback").click()
    page.locator(f"#fb-{answer.pk}").get_by_text("Feedback saved.").wait_for()
    assert page.evaluate("window.__notReloaded") is True
    assert "Grounded in the search result." in page.locator(f"#fb-{answer.pk} .feedback-list").inner_text()
    page.reload()
    entry = page.locator(f"#fb-{answer.pk} .fb-entry.own")
    assert "Grounded in the search result." in entry.inner_text()
    assert "helpful" in entry.inner_text()
    assert page.evaluate("window.__notReloaded") is None
    # Review status in place too.
    page.get_by_role("button", name="Mark reviewed").click()
    page.locator("#review-status").get_by_text("Reviewed", exact=True).wait_for()


def test_keyboard_moves_between_messages_and_lists_the_keys(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], problems: Problems
) -> None:
    conversation = data["plain"]
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.keyboard.press("j")
    first_id = page.evaluate("document.activeElement.id")
    assert first_id.startswith("m-")
    page.keyboard.press("j")
    second_id = page.evaluate("document.activeElement.id")
    assert second_id.startswith("m-") and second_id != first_id
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.id") == first_id
    page.keyboard.press("?")
    assert page.get_by_role("dialog", name="Keyboard shortcuts").is_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    page.wait_for_url(lambda url: conversation.get_absolute_url() not in url)
    assert re.search(r"/conversations/[0-9a-f-]{36}/", page.url)


def test_a_hostile_thread_runs_no_script(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    conversation = factories.make_hostile_conversation(source)
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.get_by_role("heading", name=re.compile("^Hostile")).wait_for()
    # Unfold everything: reasoning, payloads, results, raw JSON.
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    for link in page.locator("a[href^='javascript:' i]").all():
        raise AssertionError(f"a javascript: link reached the page: {link.get_attribute('href')}")
    assert page.locator("main script, main iframe, main [onerror], main [onload]").count() == 0
    page.wait_for_timeout(300)
    for url in ["/conversations/", "/"]:
        page.goto(live_server.url + url)
        page.wait_for_load_state("load")
    page.wait_for_timeout(200)


@pytest.mark.parametrize("which", ["sign-in", "list", "thread", "dashboard", "exports"])
def test_pages_have_no_serious_accessibility_violations(
    page: Any, live_server: Any, reviewer: User, data: dict[str, Any], which: str
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    if which == "sign-in":
        page.goto(f"{live_server.url}/accounts/login/")
    else:
        if which == "exports":
            for state in (JobState.RUNNING, JobState.DONE, JobState.FAILED):
                ExportJob.objects.create(requested_by=reviewer, format="openai", state=state, error="", done=1, total=2)
        sign_in(page, live_server.url, "rita")
        path = {
            "list": "/conversations/",
            "thread": data["record"].get_absolute_url(),
            "dashboard": "/",
            "exports": "/exports/",
        }[which]
        page.goto(live_server.url + path)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    results = Axe().run(page)
    serious = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes'][:3]]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []


def test_a_demo_thread_renders_for_the_readme_screenshot(
    page: Any, live_server: Any, reviewer: User, tmp_path: Path
) -> None:
    """Renders a demo Record QA thread; with MB_SCREENSHOT=1 the picture replaces the README's."""
    from django.core.management import call_command

    from chats.models import Conversation

    call_command("seed_demo", count=16, verbosity=0)
    conversation = (
        Conversation.objects.filter(input_format="record_qa", feedback_count__gt=0).order_by("id").first()
        or Conversation.objects.filter(input_format="record_qa").order_by("id").first()
    )
    assert conversation is not None
    page.set_viewport_size({"width": 1400, "height": 1100})
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    # From the user's question: the injections, their results, the answer.
    page.evaluate("document.querySelectorAll('.message-item')[1].scrollIntoView({block: 'start'})")
    assert page.locator(".injection").count() >= 1 and page.locator(".tool-call").count() >= 1
    readme_image = Path(__file__).resolve().parents[2] / "docs" / "screenshot-thread.png"
    target = readme_image if os.environ.get("MB_SCREENSHOT") else tmp_path / "screenshot-thread.png"
    page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000
