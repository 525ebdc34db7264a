"""The audit log is a hash chain: each event's hash covers its content and the hash of the event before it, so that
an event changed or removed around the append-only trigger (by a superuser, in raw SQL) is found by verify_audit,
which names the first event where the chain breaks and exits non-zero. Two writers at once still make one chain.
"""

from __future__ import annotations

import io
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from chats.audit_actions import AuditAction
from chats.models import AUDIT_GENESIS_HASH, AUDIT_VERIFIED_ACTION, AuditEvent, Source
from chats.selectors.audit import audit_chain_last_verification
from chats.services.audit import CommandActor, audit_record
from chats.services.audit_chain import CHAIN_FIELDS, audit_chain_digest
from chats.services.audit_verification import audit_chain_check
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.exports import export_record
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.review import conversation_set_review_status
from tests.factories import make_conversation

# engines: the chain head is locked per engine; CI runs this file again on SQLite.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]

TABLE = "chats_auditevent"
TRIGGER = "chats_auditevent_append_only"


def _chat(chat_id: str, *texts: str) -> dict[str, Any]:
    roles = ["user", "assistant"]
    return {"chat_id": chat_id, "main_messages": [{"role": roles[n % 2], "content": t} for n, t in enumerate(texts)]}


def _events() -> list[AuditEvent]:
    return list(AuditEvent.objects.order_by("id"))


def _recorded() -> dict[str, Any]:
    """What the last verification recorded."""
    after = AuditEvent.objects.filter(action=AUDIT_VERIFIED_ACTION).latest("id").after
    assert isinstance(after, dict)
    return after


def _verify() -> str:
    out = io.StringIO()
    call_command("verify_audit", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _verify_fails() -> CommandError:
    with pytest.raises(CommandError) as failure:
        _verify()
    return failure.value


@contextmanager
def _around_the_trigger() -> Iterator[Any]:
    """Raw SQL as a superuser who sets the append-only trigger aside (PostgreSQL; SQLite has no trigger)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The test's transaction holds the events' deferred foreign key checks: ALTER TABLE wants them done.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {TABLE} DISABLE TRIGGER {TRIGGER}")
        yield cursor
        if connection.vendor == "postgresql":
            cursor.execute(f"ALTER TABLE {TABLE} ENABLE TRIGGER {TRIGGER}")


@pytest.fixture
def logged(reviewer: User, source: Source) -> list[AuditEvent]:
    """A log written by the ordinary paths: ingestion (one document, then a bulk of three), feedback, a review."""
    conversation = make_conversation(source, n_messages=4, with_tools=False)
    conversation_ingest(source=source, document=_chat("one", "Why two bands?", "Primer dimers."))
    conversations_ingest_bulk(source=source, documents=[_chat(f"bulk-{n}", "Hello", "Hi") for n in range(3)])
    feedback_submit(author=reviewer, conversation=conversation, score=1)
    conversation_set_review_status(actor=reviewer, conversation=conversation, status="reviewed")
    events = _events()
    assert len(events) >= 6
    return events


# --------------------------------------------------------------------------------------------------------------
# The chain is built by every write


def test_ordinary_writes_chain_every_event_to_the_one_before_it(logged: list[AuditEvent]) -> None:
    actions = [event.action for event in logged]
    assert actions.count("conversation.created") == 5  # the factory's, one document, a bulk of three
    assert {"feedback.created", "conversation.status_changed"} <= set(actions)

    assert logged[0].prev_hash == AUDIT_GENESIS_HASH
    for before, event in itertools.pairwise(logged):
        assert event.prev_hash == before.event_hash
    for event in logged:
        fields = {name: getattr(event, name) for name in CHAIN_FIELDS}
        assert audit_chain_digest(fields, event.prev_hash) == event.event_hash
    assert len({event.event_hash for event in logged}) == len(logged)


def test_the_hash_covers_the_content_as_stored(reviewer: User) -> None:
    # Values that JSON text or jsonb give back in another shape: a tuple, an integral float, a key that is a number.
    after = {"big": 1e16, "small": 1e-7, "ratio": 0.1, "pair": (1, 2), 3: "three", "text": "ünïcode ✓"}
    audit_record(actor=reviewer, action=AuditAction.LABEL_UPDATED, target_type="label", target_id=7, after=after)

    stored = AuditEvent.objects.get(action="label.updated").after
    assert stored is not None and stored["3"] == "three" and stored["pair"] == [1, 2]
    assert audit_chain_check().ok


def test_verify_audit_passes_on_an_intact_log_and_records_the_verification(logged: list[AuditEvent]) -> None:
    assert audit_chain_last_verification() is None

    output = _verify()

    last = logged[-1]
    assert f"intact: {len(logged)} event(s), up to event {last.pk} with hash {last.event_hash}" in output
    recorded = AuditEvent.objects.get(action=AUDIT_VERIFIED_ACTION)
    assert recorded.actor_username.startswith("command:verify_audit")
    assert recorded.after == {
        "ok": True,
        "events_checked": len(logged),
        "last_id": last.pk,
        "last_hash": last.event_hash,
        "broken_id": None,
        "problem": "",
    }
    shown = audit_chain_last_verification()
    assert shown is not None and shown.ok and shown.events_checked == len(logged)
    assert shown.verified_at == recorded.created_at
    # The verification is an event of the chain too: the next run counts it.
    assert f"intact: {len(logged) + 1} event(s)" in _verify()


def test_verify_audit_on_an_empty_log_says_so() -> None:
    assert "empty" in _verify()
    assert _recorded()["events_checked"] == 0


# --------------------------------------------------------------------------------------------------------------
# Tampering is found, at the event where it happened


def test_an_event_edited_around_the_trigger_is_named_by_verify_audit(logged: list[AuditEvent]) -> None:
    target = logged[len(logged) // 2]
    with _around_the_trigger() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET after = %s WHERE id = %s", ['{"score": -1}', target.pk])

    failure = _verify_fails()

    assert failure.returncode == 1
    assert f"breaks at event {target.pk}: event {target.pk} does not match its hash" in str(failure)
    assert f"{logged.index(target)} event(s) before it are intact" in str(failure)
    assert _recorded()["ok"] is False and _recorded()["broken_id"] == target.pk
    shown = audit_chain_last_verification()
    assert shown is not None and not shown.ok and shown.broken_id == target.pk


def test_a_deleted_event_is_found_at_the_event_after_it(logged: list[AuditEvent]) -> None:
    index = len(logged) // 2
    removed, follower = logged[index], logged[index + 1]
    with _around_the_trigger() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [removed.pk])

    failure = _verify_fails()

    assert f"breaks at event {follower.pk}: event {follower.pk} does not follow event {logged[index - 1].pk}" in str(
        failure
    )
    assert _recorded()["broken_id"] == follower.pk


def test_removing_the_first_event_breaks_the_chain_at_its_start(logged: list[AuditEvent]) -> None:
    with _around_the_trigger() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [logged[0].pk])

    assert f"event {logged[1].pk} does not follow the start of the chain" in str(_verify_fails())


def test_an_edit_whose_hash_was_recomputed_is_found_at_the_next_event(logged: list[AuditEvent]) -> None:
    target, follower = logged[2], logged[3]
    fields = {name: getattr(target, name) for name in CHAIN_FIELDS} | {"action": "feedback.forged"}
    forged = audit_chain_digest(fields, target.prev_hash)
    with _around_the_trigger() as cursor:
        cursor.execute(
            f"UPDATE {TABLE} SET action = %s, event_hash = %s WHERE id = %s", ["feedback.forged", forged, target.pk]
        )

    assert f"breaks at event {follower.pk}: event {follower.pk} does not follow event {target.pk}" in str(
        _verify_fails()
    )


@pytest.mark.postgres
def test_deleting_a_user_keeps_the_chain_intact(logged: list[AuditEvent], source: Source) -> None:
    leaver = User.objects.create_user(username="leaver")
    conversation = make_conversation(source, n_messages=2, with_tools=False)
    conversation_set_review_status(actor=leaver, conversation=conversation, status="in_review")

    # The one change the trigger allows (the actor's id set to NULL) is outside the hash: the name is inside.
    leaver.delete()

    assert AuditEvent.objects.get(actor_username="leaver").actor_id is None
    assert "intact" in _verify()


# --------------------------------------------------------------------------------------------------------------
# The admin shows the chain and its last verification


def test_the_audit_admin_shows_the_last_verification_and_each_events_hashes(
    client: Client, admin_user: User, logged: list[AuditEvent]
) -> None:
    client.force_login(admin_user)
    assert "never been verified" in client.get("/admin/chats/auditevent/").content.decode()

    _verify()
    intact = client.get("/admin/chats/auditevent/").content.decode()
    target = logged[1]
    with _around_the_trigger() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET target_id = 'forged' WHERE id = %s", [target.pk])
    _verify_fails()
    broken = client.get("/admin/chats/auditevent/").content.decode()
    page = client.get(f"/admin/chats/auditevent/{target.pk}/change/").content.decode()

    assert "verified intact on" in intact and f"({len(logged)} events)" in intact
    assert f"Hash chain broken</strong> at event {target.pk}," in broken
    assert target.event_hash in page and target.prev_hash in page
    assert 'name="event_hash"' not in page  # shown, not editable


# --------------------------------------------------------------------------------------------------------------
# Concurrency: one chain, never a fork


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_make_one_unbroken_chain() -> None:
    writers, each = 6, 15
    barrier = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            for i in range(each):
                export_record(
                    actor=CommandActor(f"writer-{n}"), what="conversations", format="openai", filters={"i": i}
                )
        except BaseException as error:  # a fork refused by the unique constraint would land here
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    events = _events()
    assert len(events) == writers * each
    assert len({event.prev_hash for event in events}) == len(events)
    assert [event.prev_hash for event in events] == [AUDIT_GENESIS_HASH] + [e.event_hash for e in events[:-1]]
    assert audit_chain_check().ok


def test_the_database_refuses_a_second_event_after_the_same_one(logged: list[AuditEvent]) -> None:
    fork = AuditEvent(action="label.created", target_type="label", target_id="1", prev_hash=logged[-2].event_hash)

    with pytest.raises(IntegrityError, match=r"audit_chain_prev_unique|UNIQUE"), transaction.atomic():
        fork.save(force_insert=True)


# --------------------------------------------------------------------------------------------------------------
# The migration chains the events stored before it


@pytest.mark.django_db(transaction=True)
def test_the_migration_chains_the_events_stored_before_it() -> None:
    before, chained = [("chats", "0009_injection_policy_verdicts")], [("chats", "0010_audit_hash_chain")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps.get_model("chats", "AuditEvent")
        for n in range(3):
            old.objects.create(actor_username="rita", action="label.created", target_type="label", target_id=n)
        executor.loader.build_graph()
        executor.migrate(chained)
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    events = _events()
    assert [event.target_id for event in events] == ["0", "1", "2"]
    assert events[0].prev_hash == AUDIT_GENESIS_HASH and events[1].prev_hash == events[0].event_hash
    assert audit_chain_check().ok
