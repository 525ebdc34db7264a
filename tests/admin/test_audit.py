"""The admin's audit pages: the actor and the target are links, an event's page shows the field-by-field diff, and
an ingestion event links the receipt that caused it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import AuditEvent, Conversation, Source
from chats.services.feedback import feedback_submit, feedback_update
from chats.services.sources import api_key_create
from tests.factories import last_assistant, make_conversation, make_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return make_conversation(source, n_messages=4, with_tools=False)


@pytest.fixture
def staff(client: Client, admin_user: User) -> Client:
    client.force_login(admin_user)
    return client


def test_an_event_page_shows_the_feedback_change_field_by_field_escaped(
    staff: Client, reviewer: User, conversation: Conversation
) -> None:
    (helpful,) = make_labels("helpful")
    feedback, _ = feedback_submit(
        author=reviewer, conversation=conversation, message=last_assistant(conversation), score=1, comment="ok"
    )
    feedback_update(
        actor=reviewer,
        feedback=feedback,
        score=-1,
        labels=[helpful],
        comment="<img src=x onerror=alert(1)>",
        correction="",
    )
    event = AuditEvent.objects.get(action="feedback.updated")
    html = staff.get(f"/admin/chats/auditevent/{event.pk}/change/").content.decode()
    assert "<code>score</code>" in html and "<del>1</del>" in html and "<ins>-1</ins>" in html
    assert "<code>labels</code>" in html and "<ins>[&quot;helpful&quot;]</ins>" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    assert "&plusmn; changed" in html
    # The actor is the reviewer's admin page, the target the feedback found by its uuid.
    assert f'href="/admin/auth/user/{reviewer.pk}/change/"' in html
    assert f'href="/admin/chats/feedback/?uuid={feedback.uuid}"' in html
    found = staff.get(f"/admin/chats/feedback/?uuid={feedback.uuid}")
    assert list(found.context["cl"].result_list) == [feedback]


def test_an_ingestion_event_links_its_source_its_conversation_and_its_receipt(
    staff: Client, source: Source, conversation: Conversation
) -> None:
    event = AuditEvent.objects.get(action="conversation.created")
    receipt = conversation.receipts.get()
    html = staff.get(f"/admin/chats/auditevent/{event.pk}/change/").content.decode()
    assert f'href="/admin/chats/source/?name={source.name}"' in html
    assert f'href="/conversations/{conversation.uuid}/"' in html
    assert f'href="/admin/chats/ingestionreceipt/?uuid={receipt.uuid}"' in html
    assert "+ added" in html  # a created conversation: every field is new
    assert list(staff.get(f"/admin/chats/ingestionreceipt/?uuid={receipt.uuid}").context["cl"].result_list) == [receipt]
    assert list(staff.get(f"/admin/chats/source/?name={source.name}").context["cl"].result_list) == [source]


def test_the_list_links_actors_and_targets(staff: Client, admin_user: User, source: Source) -> None:
    key, _ = api_key_create(source=source, name="logger", actor=admin_user)
    html = staff.get("/admin/chats/auditevent/").content.decode()
    assert f'<a href="/admin/auth/user/{admin_user.pk}/change/">admin</a>' in html
    assert f'<a href="/admin/chats/apikey/{key.pk}/change/">api_key {key.pk}</a>' in html
