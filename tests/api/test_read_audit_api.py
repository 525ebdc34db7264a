"""Read audit on the API: the conversation detail records who read it, a person or a source's key, once per window;
the list and the export do not (an export is an audit event of its own)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import AuditEvent, Conversation, ReadEvent, Source
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return make_conversation(source, n_messages=4)


def recorded(conversation: Conversation) -> list[tuple[Any, ...]]:
    rows = ReadEvent.objects.filter(conversation_uuid=conversation.uuid).order_by("id")
    return list(rows.values_list("viewer_id", "viewer_name", "via"))


def test_the_detail_records_a_person_once_within_the_window(reviewer: User, conversation: Conversation) -> None:
    client = APIClient()
    client.force_login(reviewer)
    for _ in range(2):
        assert client.get(f"/api/v1/conversations/{conversation.uuid}/?branch=all").status_code == 200

    assert recorded(conversation) == [(reviewer.pk, "rita", "api")]


def test_the_detail_records_a_source_key_by_its_source(
    source: Source, ingest_key: str, conversation: Conversation
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {ingest_key}")
    assert client.get(f"/api/v1/conversations/{conversation.uuid}/").status_code == 200

    assert recorded(conversation) == [(None, f"source:{source.name}", "api")]


def test_a_conversation_the_key_may_not_see_records_nothing(other_ingest_key: str, conversation: Conversation) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    assert client.get(f"/api/v1/conversations/{conversation.uuid}/").status_code == 404
    assert recorded(conversation) == []


def test_the_list_and_an_export_record_no_view(reviewer: User, conversation: Conversation) -> None:
    client = APIClient()
    client.force_login(reviewer)
    assert client.get("/api/v1/conversations/").status_code == 200
    assert client.get(f"/api/v1/conversations/{conversation.uuid}/export/?format=openai").status_code == 200

    assert recorded(conversation) == []
    assert AuditEvent.objects.filter(action="conversation.exported", conversation_uuid=conversation.uuid).exists()


def test_read_audit_off_records_nothing(settings: Any, reviewer: User, conversation: Conversation) -> None:
    settings.MASTERBRAIN_READ_AUDIT = False
    client = APIClient()
    client.force_login(reviewer)
    assert client.get(f"/api/v1/conversations/{conversation.uuid}/").status_code == 200
    assert recorded(conversation) == []
