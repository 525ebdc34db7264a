"""The audit table's read paths (chats.services.reads): reading a conversation records a view in its own table,
never an audit event (pruning views is a command: tests/management/test_commands_audit.py). The machinery is
in tests/security/audit_paths.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import ReadEvent, Source
from tests.security.audit_paths import World, WritePath, check_write_path, declared_in, make_world, write_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- Read audit: a view is recorded in its own table, never as an audit event


@write_path("GET chats:thread", "GET chats:thread_messages", "service thread_open", "service read_event_record")
def reading_a_thread_records_a_view_and_no_event(w: World) -> list[dict[str, Any]]:
    client = w.page(w.reviewer)
    for _ in range(2):
        assert client.get(w.conversation.get_absolute_url()).status_code == 200
    # A window of the same thread loaded by the page's script: the same reading, within the same view.
    assert client.get(f"{w.conversation.get_absolute_url()}messages/?after=0").status_code == 200
    views = ReadEvent.objects.filter(conversation_uuid=w.conversation.uuid)
    assert list(views.values_list("viewer_name", "via")) == [(w.reviewer.username, "page")]
    return []


@write_path("GET api:conversation-detail", "service conversation_detail_open", "service read_event_record")
def reading_a_conversation_through_the_api_records_a_view_and_no_event(w: World) -> list[dict[str, Any]]:
    assert w.api().get(f"/api/v1/conversations/{w.chat.uuid}/").status_code == 200
    assert w.api(w.reviewer).get(f"/api/v1/conversations/{w.chat.uuid}/").status_code == 200
    views = ReadEvent.objects.filter(conversation_uuid=w.chat.uuid).order_by("id")
    assert list(views.values_list("viewer_name", "via")) == [(f"source:{w.source.name}", "api"), ("rita", "api")]
    return []


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
