"""The Activity panel in Chromium (issue 15): a reviewer opens a conversation, changes its feedback in the page and
exports it; an auditor then finds the view, the change with its diff and the export on the panel, newest first,
and axe finds no serious or critical violation with the panel open."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Source
from tests import factories
from tests.browser.conftest import Problems, sign_in
from tests.browser.test_given_panel import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def save_conversation_feedback(page: Any, link: str, score: str, comment: str) -> None:
    block = page.locator("#fb-conversation")
    block.get_by_text(link).click()
    block.get_by_label(score).check()
    block.get_by_label("Comment").fill(comment)
    block.get_by_role("button", name="Save feedback").click()
    page.locator("#fb-conversation").get_by_text("Feedback saved.").wait_for()


def test_an_auditor_sees_the_view_the_change_with_its_diff_and_the_export_in_order(
    page: Any, live_server: Any, reviewer: User, auditor: User, source: Source, problems: Problems
) -> None:
    conversation: Conversation = factories.make_conversation(source, n_messages=4)
    # The reviewer reads the thread, gives feedback on the whole conversation, changes it, and exports it.
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    save_conversation_feedback(page, "Give feedback", "Thumbs up", "Looks right.")
    save_conversation_feedback(page, "Edit your feedback", "Thumbs down", "The annealing step is wrong.")
    export = page.goto(f"{live_server.url}/api/v1/conversations/{conversation.uuid}/export/?format=openai")
    assert export is not None and export.status == 200

    sign_in(page, live_server.url, "aude", conversation.get_absolute_url())
    panel = page.locator("section#activity")
    panel.get_by_role("heading", name="Activity").wait_for()
    entries = panel.locator("li.activity-entry")
    assert not entries.first.is_visible()  # folded until asked for
    panel.locator("details.activity-panel > summary").click()
    entries.first.wait_for(state="visible")

    shown = [
        (entry.get_attribute("data-action"), entry.locator(".activity-who").inner_text()) for entry in entries.all()
    ]
    assert shown == [
        ("viewed", "by aude"),
        ("conversation.exported", "by rita"),
        ("feedback.updated", "by rita"),
        ("feedback.created", "by rita"),
        ("viewed", "by rita"),
        ("conversation.created", f"by source:{source.name}"),
    ]
    assert "Format openai, 1 conversation" in " ".join(entries.nth(1).inner_text().split())
    rows = entries.nth(2).locator("table.field-diff tbody tr").all_inner_texts()
    assert [row.split("\t") for row in rows] == [
        ["comment", "changed", "Looks right.", "The annealing step is wrong."],
        ["score", "changed", "1", "-1"],
    ]

    serious = [v for v in axe_violations(page) if "(serious)" in v or "(critical)" in v]
    assert serious == []


def test_a_reviewer_has_no_activity_panel(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    conversation = factories.make_conversation(source, n_messages=2)
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.get_by_role("heading", name="Given to the model").wait_for()
    assert page.locator("section#activity").count() == 0
