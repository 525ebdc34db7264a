"""The README's screenshots, taken from the browser test fixtures: the conversation list, a thread, its "Given to
the model" panel, a queue item under review, adjudication, Trends and an audit event, each in the light and the
dark theme. `make screenshots` runs this module with MB_SCREENSHOT=1, which writes them into docs/; otherwise they
go to a temporary directory (the pages are still opened and checked to render)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from chats.models import AuditEvent, Conversation, QueueItem
from chats.services.review import item_lease_next, queue_add_conversations, review_submit
from tests.browser.conftest import sign_in
from tests.factories.review import ANSWERS, make_lead, make_queue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
THEMES = ("light", "dark")


def _name(name: str, theme: str) -> str:
    return f"screenshot-{name}.png" if theme == "light" else f"screenshot-{name}-dark.png"


def test_the_readme_screenshots_in_both_themes(
    page: Any, live_server: Any, reviewer: User, other_reviewer: User, admin_user: User, tmp_path: Path
) -> None:
    target = DOCS if os.environ.get("MB_SCREENSHOT") else tmp_path
    call_command("seed_demo", count=24, verbosity=0)
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2, name="Answers")
    conversations = list(Conversation.objects.filter(input_format="record_qa").order_by("id")[:3])
    queue_add_conversations(
        actor=lead, queue=queue, conversations=Conversation.objects.filter(pk__in=[c.pk for c in conversations])
    )
    # Two reviews of the first item that disagree: the adjudication page has something to resolve.
    for user, correct in ((reviewer, "partly"), (other_reviewer, "wrong")):
        item = item_lease_next(queue=queue, reviewer=user)
        assert item is not None
        review_submit(reviewer=user, item=item, answers={**ANSWERS, "correct": correct, "quality": {}})
    open_item = QueueItem.objects.filter(queue=queue).exclude(reviews__isnull=False).order_by("id").first()
    assert open_item is not None
    thread = (
        Conversation.objects.filter(input_format="record_qa", feedback_count__gt=0).order_by("id").first()
        or conversations[0]
    )
    latest = max(c.last_activity_at for c in Conversation.objects.all()).date().isoformat()
    event = AuditEvent.objects.filter(action__startswith="review").order_by("-id").first() or AuditEvent.objects.latest(
        "id"
    )
    shots: list[tuple[str, str, str, str | None]] = [
        # (name, who, path, the element to frame, or None for the viewport)
        ("list", "rita", "/conversations/", None),
        ("thread", "rita", thread.get_absolute_url(), None),
        ("given", "rita", thread.get_absolute_url(), "#given"),
        ("review", "rita", f"/queues/{queue.pk}/items/{open_item.pk}/", None),
        ("adjudication", "lena", f"/queues/{queue.pk}/adjudicate/", None),
        ("trends", "lena", f"/trends/?date_to={latest}", None),
        ("audit", "admin", f"/audit/{event.pk}/", None),
    ]
    page.set_viewport_size({"width": 1400, "height": 1000})
    signed_in = ""
    taken = []
    for name, who, path, frame in shots:
        if who != signed_in:
            page.context.clear_cookies()
            sign_in(page, live_server.url, who)
            signed_in = who
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.ok, path
        for theme in THEMES:
            page.emulate_media(color_scheme=theme)
            page.evaluate("document.getAnimations().forEach((a) => a.finish())")
            file = target / _name(name, theme)
            if frame:
                page.locator(frame).first.scroll_into_view_if_needed()
                page.locator(frame).first.screenshot(path=str(file))
            else:
                page.screenshot(path=str(file))
            assert file.stat().st_size > 5_000, file
            taken.append(file.name)
        page.emulate_media(color_scheme="light")
    assert len(taken) == 2 * len(shots)
