"""prune_read_audit: the read audit's views older than the retention deleted, apart from the audit log (which only
records the prune itself)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any
from unittest.mock import ANY

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.models import AuditEvent, Conversation, ReadEvent, Source
from chats.services.audit import audit_event
from chats.services.audit_chain import audit_insert
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=4)


def _old_audit_event(days: int) -> AuditEvent:
    event = audit_event(
        actor=None, action=AuditAction.LABEL_CREATED, target_type="label", target_id=1, after={"name": "x"}
    )
    event.created_at = timezone.now() - timedelta(days=days)
    audit_insert([event])
    return event


def test_prune_deletes_only_old_read_events_and_never_audit_events(reviewer: User, conversation: Conversation) -> None:
    now = timezone.now()
    old = [
        ReadEvent.objects.create(
            conversation_uuid=conversation.uuid, viewer_name="rita", via="page", created_at=now - timedelta(days=d)
        )
        for d in (31, 45, 400)
    ]
    kept = ReadEvent.objects.create(
        conversation_uuid=conversation.uuid, viewer_name="rita", via="api", created_at=now - timedelta(days=29)
    )
    old_event = _old_audit_event(400)
    events_before = set(AuditEvent.objects.values_list("id", flat=True))
    out = StringIO()

    call_command("prune_read_audit", "--days", "30", stdout=out)

    assert "Deleted 3 read event(s)" in out.getvalue()
    assert list(ReadEvent.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not ReadEvent.objects.filter(pk__in=[view.pk for view in old]).exists()
    events_after = set(AuditEvent.objects.values_list("id", flat=True))
    assert events_before < events_after and old_event.pk in events_after
    pruned = AuditEvent.objects.get(id__in=events_after - events_before)
    assert pruned.action == "view_events.pruned"  # the string the log has always stored
    assert pruned.actor_username.startswith("command:prune_read_audit")
    assert pruned.after == {"older_than_days": 30, "cutoff": ANY, "deleted": 3}


def test_prune_follows_the_retention_setting_and_zero_keeps_views_forever(
    settings: Any, conversation: Conversation
) -> None:
    ReadEvent.objects.create(
        conversation_uuid=conversation.uuid,
        viewer_name="rita",
        via="page",
        created_at=timezone.now() - timedelta(days=100),
    )
    settings.MASTERBRAIN_READ_AUDIT_RETENTION_DAYS = 0
    out = StringIO()
    call_command("prune_read_audit", stdout=out)
    assert "kept forever" in out.getvalue() and ReadEvent.objects.count() == 1

    settings.MASTERBRAIN_READ_AUDIT_RETENTION_DAYS = 90
    events = AuditEvent.objects.count()
    call_command("prune_read_audit", stdout=StringIO())
    assert ReadEvent.objects.count() == 0
    assert AuditEvent.objects.count() == events + 1

    call_command("prune_read_audit", stdout=out)  # nothing left: no event
    assert AuditEvent.objects.count() == events + 1


def test_the_old_command_name_warns_on_stderr_and_runs_prune_read_audit(conversation: Conversation) -> None:
    old = ReadEvent.objects.create(
        conversation_uuid=conversation.uuid,
        viewer_name="rita",
        via="page",
        created_at=timezone.now() - timedelta(days=40),
    )
    kept = ReadEvent.objects.create(conversation_uuid=conversation.uuid, viewer_name="rita", via="api")
    out, err = StringIO(), StringIO()
    call_command("prune_view_events", "--days", "30", stdout=out, stderr=err)
    assert "prune_view_events is deprecated" in err.getvalue() and "prune_read_audit" in err.getvalue()
    assert "Deleted 1 read event(s)" in out.getvalue() and "deprecated" not in out.getvalue()
    assert list(ReadEvent.objects.values_list("pk", flat=True)) == [kept.pk] and old.pk != kept.pk
    pruned = AuditEvent.objects.get(action=AuditAction.READ_EVENTS_PRUNED)
    assert pruned.actor_username.startswith("command:prune_read_audit")


def test_the_new_command_prints_no_deprecation_warning(conversation: Conversation) -> None:
    err = StringIO()
    call_command("prune_read_audit", "--days", "30", stdout=StringIO(), stderr=err)
    assert err.getvalue() == ""
