"""The audit chain is checked against checkpoints it cannot rewrite (chats.services.audit, verify_audit): a log that
is emptied, cut short, or emptied and begun again fails verification, with a non-zero exit and the checkpoint it
disagrees with; a rewrite that also replaced the stored checkpoints is found by a head kept outside the database
(`verify_audit --expect`). Each change to the log here is made the way a table's owner could, around the triggers
(tests/security/test_audit_log.py shows that nothing else can)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from chats.audit_actions import AuditAction
from chats.models import AUDIT_GENESIS_HASH, AUDIT_VERIFIED_ACTION, AuditCheckpoint, AuditEvent
from chats.services.audit import audit_record
from chats.services.audit_chain import CHAIN_FIELDS, audit_chain_digest

# engines: CI runs this file again on SQLite, where there are no triggers to set aside.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]

HEAD = re.compile(r"verify_audit --expect ([0-9]+):([0-9a-f]{64})")


def _write(count: int, reviewer: User) -> None:
    for n in range(count):
        audit_record(actor=reviewer, action=AuditAction.LABEL_CREATED, target_type="label", target_id=n, after={"n": n})


def _events() -> list[AuditEvent]:
    return list(AuditEvent.objects.order_by("id"))


def _verify(*args: str) -> str:
    out = io.StringIO()
    call_command("verify_audit", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _verify_fails(*args: str) -> str:
    with pytest.raises(CommandError) as failure:
        _verify(*args)
    assert failure.value.returncode == 1
    return str(failure.value)


def _head(output: str) -> str:
    found = HEAD.search(output)
    assert found is not None, output
    return f"{found[1]}:{found[2]}"


@contextmanager
def _as_the_owner(*tables: str) -> Iterator[Any]:
    """Raw SQL with the tables' triggers set aside, as their owner (or a superuser) can (PostgreSQL; SQLite has no
    trigger)."""
    with connection.cursor() as cursor:
        postgres = connection.vendor == "postgresql"
        if postgres:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's deferred checks, before ALTER TABLE
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        yield cursor
        if postgres:
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")


def _empty_the_log() -> None:
    with _as_the_owner("chats_auditevent") as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("TRUNCATE chats_auditevent")
        else:
            cursor.execute("DELETE FROM chats_auditevent")


def _rechain_everything(change: dict[str, Any], target: int) -> None:
    """Change one event and recompute every hash from the start: a chain that is intact on its own."""
    prev_hash = AUDIT_GENESIS_HASH
    with _as_the_owner("chats_auditevent") as cursor:
        for event in _events():
            fields = {name: getattr(event, name) for name in CHAIN_FIELDS}
            if event.pk == target:
                fields |= change
                cursor.execute("UPDATE chats_auditevent SET action = %s WHERE id = %s", [fields["action"], event.pk])
            event_hash = audit_chain_digest(fields, prev_hash)
            cursor.execute(
                "UPDATE chats_auditevent SET prev_hash = %s, event_hash = %s WHERE id = %s",
                [prev_hash, event_hash, event.pk],
            )
            prev_hash = event_hash


# --------------------------------------------------------------------------------------------------------------
# Checkpoints are stored and printed


def test_verify_audit_stores_the_head_it_verified_and_prints_it_to_keep(reviewer: User) -> None:
    _write(4, reviewer)
    last = _events()[-1]

    output = _verify()

    checkpoint = AuditCheckpoint.objects.get()
    assert (checkpoint.events, checkpoint.last_event_id, checkpoint.head_hash) == (4, last.pk, last.event_hash)
    assert checkpoint.recorded_by.startswith("command:verify_audit")
    assert _head(output) == f"4:{last.event_hash}"
    # The next run checks the chain against it, and stores the head it verified: the verification event included.
    again = _verify()
    assert "intact: 5 event(s)" in again and "It agrees with 1 checkpoint(s)." in again
    assert list(AuditCheckpoint.objects.order_by("id").values_list("events", flat=True)) == [4, 5]


def test_no_checkpoint_is_stored_with_no_checkpoint_or_for_a_broken_chain(reviewer: User) -> None:
    _write(3, reviewer)

    assert "Checkpoint" not in _verify("--no-checkpoint")
    assert not AuditCheckpoint.objects.exists()
    with _as_the_owner("chats_auditevent") as cursor:
        cursor.execute("UPDATE chats_auditevent SET target_id = 'forged' WHERE id = %s", [_events()[1].pk])
    _verify_fails()
    assert not AuditCheckpoint.objects.exists()


def test_an_empty_log_that_never_held_a_checkpoint_verifies_as_empty() -> None:
    assert "empty: nothing to verify" in _verify()
    assert not AuditCheckpoint.objects.exists()


# --------------------------------------------------------------------------------------------------------------
# A log emptied, cut short, or begun again fails


def test_an_emptied_log_fails_verification_against_its_checkpoint(reviewer: User) -> None:
    _write(5, reviewer)
    _verify()
    checkpoint = AuditCheckpoint.objects.get()

    _empty_the_log()
    failure = _verify_fails()

    assert f"The audit chain is cut short: the log holds 0 event(s), but checkpoint {checkpoint.pk}" in failure
    assert f"counted 5, the last with hash {checkpoint.head_hash}" in failure
    assert "Known intact: the first 0 event(s)" in failure
    recorded = AuditEvent.objects.get(action=AUDIT_VERIFIED_ACTION)
    assert recorded.after is not None
    assert (recorded.after["ok"], recorded.after["broken_id"]) == (False, None)
    assert AuditCheckpoint.objects.count() == 1  # nothing stored for a failing chain


def test_events_cut_from_the_end_fail_verification(reviewer: User) -> None:
    _write(6, reviewer)
    _verify()  # a checkpoint at 6
    _write(2, reviewer)
    _verify()  # and at 9 (the verification event, and two more)
    events = _events()

    with _as_the_owner("chats_auditevent") as cursor:
        cursor.execute("DELETE FROM chats_auditevent WHERE id >= %s", [events[7].pk])
    failure = _verify_fails()

    assert "cut short: the log holds 7 event(s), but checkpoint" in failure
    assert "counted 9" in failure
    # The first checkpoint still agrees: the events up to it are known intact.
    assert "Known intact: the first 6 event(s)" in failure


def test_a_log_emptied_and_begun_again_fails_once_it_outgrows_the_checkpoint(reviewer: User) -> None:
    _write(3, reviewer)
    _verify()
    checkpoint = AuditCheckpoint.objects.get()

    _empty_the_log()
    _write(5, reviewer)  # a new chain, intact on its own, longer than the checkpoint
    third = _events()[2]
    failure = _verify_fails()

    assert f"The audit chain breaks at event {third.pk}: event {third.pk}, number 3 of the chain," in failure
    assert f"but checkpoint {checkpoint.pk}" in failure and f"recorded {checkpoint.head_hash} there" in failure
    assert "Known intact: the first 0 event(s)" in failure


# --------------------------------------------------------------------------------------------------------------
# A head kept outside the database


def test_verify_audit_agrees_with_a_head_kept_outside(reviewer: User) -> None:
    _write(3, reviewer)
    kept = _head(_verify())
    _write(2, reviewer)

    output = _verify("--expect", kept)

    assert "It agrees with 2 checkpoint(s)." in output  # the stored one, and the one given


def test_a_rewrite_that_also_replaced_the_checkpoints_is_found_only_by_a_head_kept_outside(reviewer: User) -> None:
    _write(4, reviewer)
    kept = _head(_verify())
    target = _events()[1]

    # The owner rewrites an event, recomputes the whole chain, and removes the checkpoints that would tell.
    _rechain_everything({"action": "label.forged"}, target.pk)
    with _as_the_owner("chats_auditcheckpoint") as cursor:
        cursor.execute("DELETE FROM chats_auditcheckpoint")

    assert "intact" in _verify()  # the database alone cannot tell
    failure = _verify_fails("--expect", kept)
    fourth = _events()[3]
    assert f"breaks at event {fourth.pk}: event {fourth.pk}, number 4 of the chain," in failure
    assert f"but the expected head 4:{kept.split(':')[1][:12]}" in failure


def test_an_expected_head_beyond_the_log_fails(reviewer: User) -> None:
    _write(2, reviewer)
    head = _events()[-1].event_hash

    failure = _verify_fails("--expect", f"40:{head}")

    assert "cut short: the log holds 2 event(s), but the expected head 40:" in failure


@pytest.mark.parametrize(
    "text",
    [
        "12",
        "12:",
        "x:" + "a" * 64,
        "\N{SUPERSCRIPT TWO}:" + "a" * 64,
        "0:" + "a" * 64,
        "3:" + "a" * 63,
        "3:" + "g" * 64,
    ],
)
def test_a_malformed_expected_head_is_refused_before_anything_is_written(reviewer: User, text: str) -> None:
    _write(1, reviewer)

    with pytest.raises(CommandError, match=r"--expect .*<events>:<hash>"):
        _verify("--expect", text)

    assert AuditEvent.objects.count() == 1 and not AuditCheckpoint.objects.exists()


# --------------------------------------------------------------------------------------------------------------
# Every checkpoint is checked, in one pass beside the events


def test_every_stored_checkpoint_is_checked_a_chunk_at_a_time(reviewer: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chats.services.audit_verification.CHAIN_CHUNK", 2)
    for count in (1, 3, 2):
        _write(count, reviewer)
        _verify()
    assert "It agrees with 3 checkpoint(s)." in _verify()
    middle = AuditCheckpoint.objects.order_by("events")[1]

    with _as_the_owner("chats_auditcheckpoint") as cursor:
        cursor.execute("UPDATE chats_auditcheckpoint SET head_hash = %s WHERE id = %s", ["f" * 64, middle.pk])
    failure = _verify_fails()

    assert f"number {middle.events} of the chain" in failure and f"checkpoint {middle.pk}" in failure
    assert "Known intact: the first 1 event(s)" in failure  # up to the first checkpoint, which agrees


def test_the_audit_pages_show_a_log_cut_short(client: Client, admin_user: User, reviewer: User) -> None:
    _write(2, reviewer)
    _verify()
    _empty_the_log()
    _verify_fails()
    client.force_login(admin_user)

    admin_page = client.get("/admin/chats/auditevent/").content.decode()
    audit_page = client.get("/audit/").content.decode()

    assert "<strong>Hash chain broken</strong>, found on" in admin_page and "the log holds 0 event(s)" in admin_page
    assert "Chain broken" in audit_page and "at event" not in audit_page
    assert "the log holds 0 event(s)" in audit_page
