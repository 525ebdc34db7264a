"""The audit section in Chromium: an auditor who is not staff opens the log, filters it by conversation, opens a
feedback change and reads its diff field by field; axe finds no serious or critical violation on either page.

With MB_SCREENSHOT=1 the event page is saved as docs/audit-event.png, the README's picture of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import AuditEvent, Source
from chats.services.feedback import feedback_submit, feedback_update
from tests.browser.conftest import Problems, sign_in
from tests.browser.test_given_panel import axe_violations
from tests.factories import last_assistant, make_conversation, make_labels

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMMENT_BEFORE = "The primers look fine.\nAnnealing at 55 °C.\nExtension 30 s per kb."
COMMENT_AFTER = "The primers look fine.\nAnnealing at 62 °C: 55 °C gives the extra bands.\nExtension 30 s per kb."


def serious(violations: list[str]) -> list[str]:
    return [v for v in violations if "(serious)" in v or "(critical)" in v]


def test_an_auditor_filters_the_log_by_conversation_and_reads_a_feedback_change(
    page: Any,
    live_server: Any,
    auditor: User,
    reviewer: User,
    source: Source,
    problems: Problems,
    tmp_path: Path,
) -> None:
    helpful, wrong = make_labels("helpful", "wrong primer")
    conversation = make_conversation(source, n_messages=4, with_tools=False, title="Colony PCR")
    make_conversation(source, n_messages=4, with_tools=False, title="Another chat")  # filtered out
    feedback, _ = feedback_submit(
        author=reviewer,
        conversation=conversation,
        message=last_assistant(conversation),
        score=1,
        labels=[helpful],
        comment=COMMENT_BEFORE,
    )
    feedback_update(
        actor=reviewer, feedback=feedback, score=-1, labels=[wrong], comment=COMMENT_AFTER, correction="<b>62 °C</b>"
    )
    changed = AuditEvent.objects.get(action="feedback.updated")

    sign_in(page, live_server.url, auditor.username, "/audit/")
    page.get_by_role("heading", name="Audit log").wait_for()
    assert "never been verified" in page.locator(".chain-status").inner_text()
    page.get_by_label("Conversation uuid").fill(str(conversation.uuid))
    page.get_by_role("button", name="Apply filters").click()
    page.wait_for_url(f"**/audit/?*conversation={conversation.uuid}*")
    rows = page.locator("table.audit-events tbody tr")
    actions = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(rows.count())]
    assert actions == ["feedback.updated", "feedback.created", "conversation.created"]
    assert "comment changed" in rows.first.inner_text()
    assert serious(axe_violations(page)) == []

    page.get_by_role("link", name=f"#{changed.pk}", exact=True).click()
    page.get_by_role("heading", name="What changed").wait_for()
    diff = page.locator("table.field-diff")

    def field(path: str) -> str:
        return " ".join(diff.locator("tr", has=page.locator("code", has_text=path)).first.inner_text().split())

    assert field("score") == "score ± changed before: 1 after: -1"  # the words are for screen readers too
    assert field("labels") == 'labels ± changed before: ["helpful"] after: ["wrong primer"]'
    assert field("correction") == "correction ± changed before: (empty) after: <b>62 °C</b>"  # text, not markup
    lines = diff.locator("pre.diff .diff-line")
    # Each changed line is said (for screen readers) and signed, besides its colour.
    assert lines.filter(has_text="Annealing at 55 °C.").first.inner_text().startswith("removed:\n- Annealing at 55")
    assert lines.filter(has_text="Annealing at 62 °C").first.inner_text().startswith("added:\n+ Annealing at 62 °C")
    # The target is the thread at the feedback's message.
    target = page.locator("dl.audit-facts a", has_text="feedback")
    assert target.get_attribute("href").endswith(f"#m-{last_assistant(conversation).pk}")
    assert serious(axe_violations(page)) == []

    readme_image = Path(__file__).resolve().parents[2] / "docs" / "audit-event.png"
    page.screenshot(path=str(readme_image if os.environ.get("MB_SCREENSHOT") else tmp_path / "audit-event.png"))
