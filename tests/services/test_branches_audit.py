"""The audit table's branch paths (chats.services.branches): switching a conversation's active branch on the
review page. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Message, Source
from tests.security.audit_paths import World, WritePath, check_write_path, declared_in, expect, make_world, write_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


@write_path(
    "POST chats:active_branch",
    "service message_set_active_branch",
)
def review_page_switches_the_active_branch(w: World) -> list[dict[str, Any]]:
    was = w.conversation.active_leaf_key
    other = Message.objects.get(conversation=w.conversation, on_active_path=False)
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/branch/", {"message": other.pk})
    assert response.status_code == 302
    assert was != other.key
    return [
        expect(
            "conversation.branch_switched",
            w.reviewer,
            "conversation",
            w.conversation.uuid,
            before={"active_leaf_key": was},
            after={"active_leaf_key": other.key, "message": other.key},
            conversation=w.conversation.uuid,
        )
    ]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
