"""The "Given to the model" panel in Chromium: the Done-when document of issue 14, ingested through the API, shows its
model settings, times, scenario, tools offered, the context's ids with their states, and the violations in words
on the panel, the header and the injection markers; axe finds nothing on the page, folded or unfolded."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import Conversation
from tests.browser.conftest import Problems, sign_in
from tests.factories.policy import (
    DISABLED_RECORD,
    LISTED_DISCUSSION,
    NEVER_USED,
    PERMITTED,
    SYSTEM_PROMPT,
    UNLISTED_DISCUSSION,
    given_document,
    post,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every folded part of the page: the panel's, and the messages' (an injected protocol's Markdown headings among
# them, which keep their look but not a rank in the page's outline).
UNFOLD_ALL = "document.querySelectorAll('details').forEach((d) => { d.open = true; })"


@pytest.fixture
def conversation(ingest_client: APIClient) -> Conversation:
    body = post(ingest_client, "/api/v1/ingest/", given_document())
    return Conversation.objects.get(uuid=body["conversation"])


def open_thread(page: Any, base_url: str, conversation: Conversation) -> Any:
    sign_in(page, base_url, "rita", conversation.get_absolute_url())
    panel = page.locator("section#given")
    panel.get_by_role("heading", name="Given to the model").wait_for()
    return panel


def axe_violations(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes'][:3]]}"
        for v in results.response["violations"]
    ]


def test_the_panel_shows_what_the_model_was_given_and_the_violations_in_words(
    page: Any, live_server: Any, reviewer: User, conversation: Conversation, problems: Problems
) -> None:
    panel = open_thread(page, live_server.url, conversation)

    overview = panel.locator("dl.given-overview")
    assert overview.is_visible()
    text = " ".join(overview.inner_text().split())
    assert "qwen3.5-flash" in text
    assert "enable_thinking: true" in text and "temperature: 0.2" in text
    assert "2025-03-01 10:00:00" in text and "2025-03-01 10:05:30" in text and "5 min 30 s" in text
    assert re.search(r"Scenario\s+2 keys", text)
    assert "2 (from the request's tools list)" in text
    assert "Policy violation: 2 of 3 injections not permitted" in text
    # The long parts are folded until asked for.
    context = panel.locator("details#injection-context")
    listed = context.locator("table.context-ids")
    assert not listed.is_visible()
    context.locator("> summary").click()
    listed.wait_for(state="visible")

    def state(artifact_id: str) -> str:
        row = listed.locator("tr", has=page.get_by_text(artifact_id, exact=True))
        return " ".join(row.inner_text().split())

    assert state(PERMITTED).endswith("Malformed protocol id protocol Injected and resolved")
    assert state(NEVER_USED) == f"{NEVER_USED} protocol Unused"
    assert state(DISABLED_RECORD) == f"{DISABLED_RECORD} record Injected and resolved"
    assert state(LISTED_DISCUSSION) == f"{LISTED_DISCUSSION} discussion Unused"

    tools = panel.locator("table.tools-offered")
    panel.locator("details.given-part", has=page.locator("table.tools-offered")).locator("> summary").click()
    assert [" ".join(row.split()) for row in tools.locator("tbody tr").all_inner_texts()] == [
        "airalogy_search Search protocols and records by keyword. no",
        "inject_airalogy_protocols Inject protocols. yes",
    ]
    prompts = panel.locator("details.given-part", has_text="System, developer and scenario messages")
    prompts.locator("> summary").click()
    prompts.get_by_text(SYSTEM_PROMPT).wait_for()
    scenario = panel.locator("details.given-part", has=page.get_by_text("Scenario", exact=True))
    scenario.locator("> summary").click()
    rows = scenario.locator("table.record-data tbody tr").all_inner_texts()
    assert sorted(row.split() for row in rows) == [["lab", "example"], ["workflow", "record_qa"]]


def test_violations_are_marked_by_words_and_borders_not_only_by_colour(
    page: Any, live_server: Any, reviewer: User, conversation: Conversation, problems: Problems
) -> None:
    open_thread(page, live_server.url, conversation)

    assert "Policy violation" in page.locator(".thread-head .policy-flag").inner_text()

    def marker(artifact_id: str) -> Any:
        return page.locator(".injection", has=page.locator("code.artifact-id", has_text=artifact_id))

    assert marker(DISABLED_RECORD).locator(".verdict").inner_text() == "⚠ Policy violation: kind not enabled"
    assert marker(UNLISTED_DISCUSSION).locator(".verdict").inner_text() == "⚠ Policy violation: not listed"
    assert marker(PERMITTED).locator(".verdict").inner_text() == "✓ Permitted by the context"

    def border_left(artifact_id: str) -> float:
        width = marker(artifact_id).evaluate("(el) => getComputedStyle(el).borderLeftWidth")
        return float(width.removesuffix("px"))

    # Besides its colour, a violation has a thicker border and a warning icon (hidden from screen readers, which
    # read the words).
    assert border_left(DISABLED_RECORD) > border_left(PERMITTED)
    icon = marker(UNLISTED_DISCUSSION).locator(".verdict [aria-hidden='true']")
    assert icon.inner_text().strip() == "⚠"
    # The header's flag leads to the injection context, unfolded.
    page.locator(".policy-flag a").click()
    page.locator("details#injection-context table.context-ids").wait_for(state="visible")


@pytest.mark.parametrize("folding", ["as loaded", "folded", "unfolded"])
def test_axe_finds_no_violation_on_the_thread_with_the_panel(
    page: Any, live_server: Any, reviewer: User, conversation: Conversation, problems: Problems, folding: str
) -> None:
    panel = open_thread(page, live_server.url, conversation)
    if folding == "folded":
        panel.locator("details.given-panel > summary").click()
        assert not panel.locator("dl.given-overview").is_visible()
    elif folding == "unfolded":
        page.evaluate(UNFOLD_ALL)
        assert panel.locator("table.context-ids").is_visible()

    assert axe_violations(page) == []
