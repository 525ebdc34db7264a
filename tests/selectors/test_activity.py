"""The thread's Activity panel (chats/selectors/activity.py): the conversation's timeline of views, audit events and
receipts, shown to auditors and staff (not reviewers), in a number of queries that does not grow with the history."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from chats.models import Conversation, Feedback, ReadEvent, Source
from chats.services.feedback import feedback_submit, feedback_update
from tests import factories

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=4)


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_user(username="stella", password="correct horse battery staple", is_staff=True)


def test_the_panel_is_shown_to_an_auditor_who_is_not_staff_and_to_staff(
    auditor: User, staff: User, conversation: Conversation
) -> None:
    assert not auditor.is_staff
    for person in (auditor, staff):
        response = signed_in(person).get(conversation.get_absolute_url())
        body = response.content.decode()
        assert response.context["activity"] is not None
        assert 'id="activity"' in body and '<details class="activity-panel">' in body  # folded


def test_reviewers_do_not_get_the_panel_nor_its_queries(
    reviewer: User, conversation: Conversation, django_assert_num_queries: Any
) -> None:
    client = signed_in(reviewer)
    client.get(conversation.get_absolute_url())  # the view is recorded: the next request is the page alone
    with django_assert_num_queries(15) as captured:
        response = client.get(conversation.get_absolute_url())
    assert response.context["activity"] is None
    assert 'id="activity"' not in response.content.decode()
    sql = " ".join(query["sql"] for query in captured.captured_queries)
    assert "chats_readevent" not in sql and "chats_auditevent" not in sql


def test_the_panel_shows_the_view_the_feedback_change_with_its_diff_and_the_export_newest_first(
    reviewer: User, auditor: User, conversation: Conversation
) -> None:
    page = signed_in(reviewer)
    page.get(conversation.get_absolute_url())
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, score=1, comment="Primers look fine.")
    response = page.post(
        f"/conversations/{conversation.uuid}/feedback/",
        {"feedback": str(feedback.uuid), "score": "-1", "comment": "Wrong <b>annealing</b> temperature."},
    )
    assert response.status_code == 302
    assert Feedback.objects.get(pk=feedback.pk).score == -1
    api = APIClient()
    api.force_login(reviewer)
    assert api.get(f"/api/v1/conversations/{conversation.uuid}/export/?format=openai").status_code == 200

    body = signed_in(auditor).get(conversation.get_absolute_url()).content.decode()
    panel = body[body.index('<section id="activity"') : body.index("</section>", body.index('<section id="activity"'))]
    items = panel.split('<li class="activity-entry')[1:]
    shown = [re.search(r'data-action="([^"]+)".*?<span class="actor">([^<]*)</span>', item, re.S) for item in items]
    assert [match.groups() for match in shown if match] == [
        ("viewed", "aude"),  # the auditor's own view, just now
        ("conversation.exported", "rita"),
        ("feedback.updated", "rita"),
        ("feedback.created", "rita"),
        ("viewed", "rita"),
        ("conversation.created", f"source:{conversation.source.name}"),
    ]
    _, export, change, _, view, created = items
    assert "Format <code>openai</code>, 1 conversation" in export
    assert "<code>score</code>" in change and "<code>1</code>" in change and "<code>-1</code>" in change
    assert "<code>comment</code>" in change and "<code>Primers look fine.</code>" in change
    assert html.escape("Wrong <b>annealing</b> temperature.") in change and "<b>annealing" not in change
    assert ">Viewed</span>" in view
    receipt = conversation.receipts.get()
    assert f'href="/api/v1/receipts/{receipt.uuid}/"' in created


def test_a_long_text_change_is_shown_as_a_line_diff(auditor: User, reviewer: User, conversation: Conversation) -> None:
    old = "\n".join(f"line {n}" for n in range(8))
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, score=1, comment=old)
    page = signed_in(reviewer)
    page.post(
        f"/conversations/{conversation.uuid}/feedback/",
        {"feedback": str(feedback.uuid), "score": "1", "comment": old.replace("line 4", "line four")},
    )
    body = signed_in(auditor).get(conversation.get_absolute_url()).content.decode()
    assert '<pre class="diff" aria-label="Line diff of comment">' in body
    assert '<span class="visually-hidden">removed: </span>- line 4</span>' in body
    assert '<span class="visually-hidden">added: </span>+ line four</span>' in body


def test_views_by_key_and_unchanged_ingestions_are_in_the_timeline(
    auditor: User, source: Source, ingest_key: str, conversation: Conversation
) -> None:
    key_client = APIClient()
    key_client.credentials(HTTP_AUTHORIZATION=f"Api-Key {ingest_key}")
    assert key_client.get(f"/api/v1/conversations/{conversation.uuid}/").status_code == 200
    factories.ingest(source, {"chat_id": conversation.external_id, "main_messages": factories.make_messages(4)})

    activity = signed_in(auditor).get(conversation.get_absolute_url()).context["activity"]

    actions = [(entry.action, entry.actor, entry.via) for entry in activity.entries]
    assert actions[:3] == [
        ("viewed", "aude", "page"),
        ("ingestion.unchanged", f"source:{source.name}", ""),
        ("viewed", f"source:{source.name}", "api"),
    ]
    assert activity.entries[1].receipt is not None and activity.entries[1].receipt.outcome == "unchanged"


def _auditor_page_queries(client: Client, conversation: Conversation, django_assert_num_queries: Any) -> Any:
    # The page as a reader sees it (16), the view recorded, and the activity: audit events, receipts, views
    with django_assert_num_queries(16 + 1 + 3):
        response = client.get(conversation.get_absolute_url())
    assert response.status_code == 200
    return response.context["activity"]


def test_the_panel_takes_the_same_queries_for_a_short_and_a_long_history(
    auditor: User, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    short = factories.make_conversation(source, n_messages=4)
    long = factories.make_conversation(source, n_messages=4)
    feedback_submit(author=reviewer, conversation=short, score=1, comment="0")
    feedback, _ = feedback_submit(author=reviewer, conversation=long, score=1, comment="0")
    for number in range(1, 120):
        feedback_update(actor=reviewer, feedback=feedback, score=1, labels=[], comment=str(number), correction="")
    ReadEvent.objects.bulk_create(
        ReadEvent(conversation_uuid=long.uuid, viewer_name=f"reader-{n}", via="page") for n in range(150)
    )
    client = signed_in(auditor)

    small = _auditor_page_queries(client, short, django_assert_num_queries)
    large = _auditor_page_queries(client, long, django_assert_num_queries)

    assert len(small.entries) == 3 and not small.truncated  # the ingestion, the feedback, the auditor's view
    assert len(large.entries) == 100 and large.truncated
    assert large.entries[0].action == "viewed" and large.entries[0].actor == "aude"
