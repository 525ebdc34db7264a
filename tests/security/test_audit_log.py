"""PostgreSQL: the audit log is append-only (migration 0005) and cannot be truncated (migration 0024). The ORM, raw
SQL and the admin cannot change, delete or truncate an event, nor a checkpoint of the chain, and deleting a user
keeps the events they wrote, under their name. (What a checkpoint finds when the log is emptied around all this:
tests/security/test_audit_checkpoints.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test import RequestFactory

from chats.audit_actions import AuditAction
from chats.models import AuditCheckpoint, AuditEvent, Source
from chats.services.audit import CommandActor, audit_record
from chats.services.audit_verification import audit_chain_verify
from chats.services.feedback import feedback_submit
from chats.services.review import conversation_set_review_status
from tests.security.audit_paths import World, admin_post, make_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


@pytest.fixture
def event(world: World) -> AuditEvent:
    return audit_record(
        actor=world.reviewer, action=AuditAction.LABEL_UPDATED, target_type="label", target_id=1, before={}, after={}
    )


ORM_REWRITES: dict[str, Callable[[AuditEvent], Any]] = {
    "save": lambda event: AuditEvent.objects.filter(pk=event.pk).first().save(),  # type: ignore[union-attr]
    "update": lambda event: AuditEvent.objects.filter(pk=event.pk).update(action="forged"),
    "update to no actor and more": lambda event: AuditEvent.objects.filter(pk=event.pk).update(
        actor=None, after={"x": 1}
    ),
    "delete": lambda event: AuditEvent.objects.get(pk=event.pk).delete(),
    "queryset delete": lambda event: AuditEvent.objects.all().delete(),
}


@pytest.mark.postgres
@pytest.mark.parametrize("rewrite", ORM_REWRITES.values(), ids=ORM_REWRITES.keys())
def test_the_orm_cannot_change_or_delete_an_audit_event(
    event: AuditEvent, rewrite: Callable[[AuditEvent], Any]
) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        rewrite(event)

    assert AuditEvent.objects.filter(pk=event.pk, action="label.updated", actor=event.actor).exists()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE chats_auditevent SET after = '{}'::jsonb, action = 'forged' WHERE id = %s",
        "UPDATE chats_auditevent SET actor_username = 'someone else' WHERE id = %s",
        "DELETE FROM chats_auditevent WHERE id = %s",
    ],
)
def test_raw_sql_cannot_change_or_delete_an_audit_event(event: AuditEvent, sql: str) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [event.pk])

    assert AuditEvent.objects.filter(pk=event.pk, action="label.updated", actor_username="rita").exists()


@pytest.mark.postgres
def test_deleting_a_user_keeps_their_events_under_their_name(world: World) -> None:
    someone = User.objects.create_user(username="leaver")
    conversation_set_review_status(actor=someone, conversation=world.conversation, status="in_review")
    feedback_submit(author=world.reviewer, conversation=world.chat, score=1)
    someone_events = list(AuditEvent.objects.filter(actor=someone).values_list("pk", flat=True))

    someone.delete()

    kept = AuditEvent.objects.filter(pk__in=someone_events)
    assert [(e.action, e.actor_id, e.actor_username) for e in kept] == [("conversation.status_changed", None, "leaver")]
    assert AuditEvent.objects.filter(actor=world.reviewer, action="feedback.created").count() == 2


@pytest.mark.postgres
def test_a_user_deleted_in_the_admin_keeps_their_events(world: World) -> None:
    conversation_set_review_status(actor=world.other_user, conversation=world.conversation, status="reviewed")
    pk = world.other_user.pk

    admin_post(world, f"/admin/auth/user/{pk}/delete/", {"post": "yes"})

    assert not User.objects.filter(pk=pk).exists()
    kept = AuditEvent.objects.get(action="conversation.status_changed", actor_username="uma")
    assert kept.actor_id is None
    assert AuditEvent.objects.get(action="user.deleted", target_id=str(pk)).actor == world.admin


@pytest.mark.postgres
def test_the_admin_cannot_delete_audit_events_even_for_a_superuser(world: World) -> None:
    client = world.page(world.admin)
    event = AuditEvent.objects.order_by("pk").first()
    assert event is not None
    count = AuditEvent.objects.count()

    refused = client.post(f"/admin/chats/auditevent/{event.pk}/delete/", {"post": "yes"})
    changed = client.post(f"/admin/chats/auditevent/{event.pk}/change/", {"action": "forged"})
    bulk = client.post(
        "/admin/chats/auditevent/", {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"}
    )

    assert (refused.status_code, changed.status_code) == (403, 403)
    assert bulk.status_code in (200, 302)  # no such action for this admin
    assert AuditEvent.objects.count() == count
    assert "delete_selected" not in admin.site._registry[AuditEvent].get_actions(_admin_request(world.admin))


def _admin_request(user: User) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


# --------------------------------------------------------------------------------------------------------------
# TRUNCATE, a statement the row trigger does not see, is refused too (migration 0024), and the chain's checkpoints
# are append-only like the log


def _sql(statement: str, *params: Any) -> None:
    with connection.cursor() as cursor:
        # The test's transaction holds deferred foreign key checks: TRUNCATE wants them done first.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(statement, list(params))


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "TRUNCATE chats_auditevent",
        "TRUNCATE chats_auditevent RESTART IDENTITY CASCADE",
        # A truncation that cascades to the log through its actor's foreign key.
        "TRUNCATE auth_user CASCADE",
    ],
)
def test_the_audit_log_cannot_be_truncated(event: AuditEvent, sql: str) -> None:
    count = AuditEvent.objects.count()

    with pytest.raises(DatabaseError, match="chats_auditevent is append-only: TRUNCATE refused"), transaction.atomic():
        _sql(sql)

    assert AuditEvent.objects.count() == count
    assert AuditEvent.objects.filter(pk=event.pk, action="label.updated").exists()


@pytest.mark.postgres
def test_manage_py_flush_is_refused_since_it_would_empty_the_audit_log(event: AuditEvent) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's deferred checks, which TRUNCATE wants done
    with pytest.raises(CommandError, match="couldn't be flushed") as failure:
        call_command("flush", interactive=False, verbosity=0)

    assert "TRUNCATE refused" in str(failure.value.__cause__)
    assert AuditEvent.objects.filter(pk=event.pk).exists()


@pytest.fixture
def checkpoint(event: AuditEvent) -> AuditCheckpoint:
    recorded = audit_chain_verify(actor=CommandActor("verify_audit"))[1]
    assert recorded is not None
    return recorded


CHECKPOINT_REWRITES: dict[str, Callable[[AuditCheckpoint], Any]] = {
    "save": lambda checkpoint: AuditCheckpoint.objects.get(pk=checkpoint.pk).save(),
    "update": lambda checkpoint: AuditCheckpoint.objects.filter(pk=checkpoint.pk).update(events=1),
    "delete": lambda checkpoint: AuditCheckpoint.objects.get(pk=checkpoint.pk).delete(),
    "queryset delete": lambda checkpoint: AuditCheckpoint.objects.all().delete(),
    "raw update": lambda checkpoint: _sql(
        "UPDATE chats_auditcheckpoint SET head_hash = repeat('0', 64) WHERE id = %s", checkpoint.pk
    ),
    "raw delete": lambda checkpoint: _sql("DELETE FROM chats_auditcheckpoint WHERE id = %s", checkpoint.pk),
}


@pytest.mark.postgres
@pytest.mark.parametrize("rewrite", CHECKPOINT_REWRITES.values(), ids=CHECKPOINT_REWRITES.keys())
def test_a_checkpoint_cannot_be_changed_or_deleted(
    checkpoint: AuditCheckpoint, rewrite: Callable[[AuditCheckpoint], Any]
) -> None:
    with pytest.raises(DatabaseError, match="checkpoints are append-only"), transaction.atomic():
        rewrite(checkpoint)

    stored = AuditCheckpoint.objects.get(pk=checkpoint.pk)
    assert (stored.events, stored.head_hash) == (checkpoint.events, checkpoint.head_hash)


@pytest.mark.postgres
def test_the_checkpoints_cannot_be_truncated(checkpoint: AuditCheckpoint) -> None:
    with (
        pytest.raises(DatabaseError, match="chats_auditcheckpoint is append-only: TRUNCATE refused"),
        transaction.atomic(),
    ):
        _sql("TRUNCATE chats_auditcheckpoint")

    assert AuditCheckpoint.objects.filter(pk=checkpoint.pk).exists()


@pytest.mark.postgres
def test_the_admin_cannot_change_or_delete_a_checkpoint_even_for_a_superuser(
    world: World, checkpoint: AuditCheckpoint
) -> None:
    client = world.page(world.admin)
    url = f"/admin/chats/auditcheckpoint/{checkpoint.pk}/"

    page = client.get(f"{url}change/").content.decode()
    refused = client.post(f"{url}delete/", {"post": "yes"})
    changed = client.post(f"{url}change/", {"events": "1"})

    assert f"{checkpoint.events}:{checkpoint.head_hash}" in page  # as verify_audit --expect takes it
    assert (refused.status_code, changed.status_code) == (403, 403)
    assert AuditCheckpoint.objects.get(pk=checkpoint.pk).events == checkpoint.events
