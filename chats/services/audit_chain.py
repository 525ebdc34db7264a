"""How an audit event is stored: chained after the last stored event.

The log is a hash chain, so that an edit made around the trigger (by a superuser) is evident. Every event is stored
by `audit_insert`, which chains it after the last stored event: its `prev_hash` is that event's hash, and its
`event_hash` is the SHA-256 of its canonical content (`audit_chain_digest`) with `prev_hash`. Chain order is id
order: on PostgreSQL `audit_insert` takes a transaction-level advisory lock before it reads the head and takes ids
from the sequence, and holds it to commit, so that two writers never follow the same event (a unique constraint on
`prev_hash` refuses a fork anyway). The lock serializes audited writes from that point to commit: write an event
last in its transaction. `audit_chain_verify` (`chats.services.audit_verification`, the verify_audit command) walks
the chain and records the outcome as an event of its own.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from chats.models import AUDIT_EVENT_CONTENT, AUDIT_GENESIS_HASH, AuditEvent

# The fields an event's hash covers, as stored. Not `actor_id`: deleting a user sets it to NULL (the one change the
# append-only trigger lets through), and `actor_username` keeps who it was.
CHAIN_FIELDS = ("id", *AUDIT_EVENT_CONTENT, "created_at")
# pg_advisory_xact_lock's key for "appending to the audit chain"; any constant no other lock in the database uses.
CHAIN_LOCK_KEY = 0x6D62_6175_6469_7401
# Events inserted per statement, and read per round trip when the chain is walked.
CHAIN_CHUNK = 2000


def _stored_json(value: object) -> Any:
    """A JSON value as it reads back from the database: through JSON text (tuples as lists, keys as strings), with
    integral floats as integers (PostgreSQL's jsonb gives 1e16 back as 10000000000000000)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(key): _stored_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stored_json(item) for item in value]
    return value


def audit_chain_digest(fields: Mapping[str, Any], prev_hash: str) -> str:
    """The hash of an event: SHA-256 (hex) of its canonical content (the CHAIN_FIELDS as deterministic JSON: sorted
    keys, no whitespace, ids as text, the time in UTC) and the hash of the event before it.

    Every stored hash depends on this form: it never changes (a new form would need a new field saying which)."""
    conversation = fields["conversation_uuid"]
    created_at: datetime = fields["created_at"]
    content = {
        "id": str(fields["id"]),
        "actor_username": fields["actor_username"],
        "action": fields["action"],
        "target_type": fields["target_type"],
        "target_id": str(fields["target_id"]),
        "conversation_uuid": str(uuid.UUID(str(conversation))) if conversation is not None else None,
        "before": _stored_json(fields["before"]),
        "after": _stored_json(fields["after"]),
        "created_at": created_at.astimezone(UTC).isoformat(),
        "prev_hash": prev_hash,
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _chain_head(connection: BaseDatabaseWrapper, count: int) -> tuple[str, list[int]]:
    """The hash of the last stored event, and the ids of the next `count` events, in chain order."""
    table = connection.ops.quote_name(AuditEvent._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Held to commit: the next writer reads the head only once these events are committed. Its own
            # statement, so that the head is read with a snapshot taken after the lock is granted.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])
            cursor.execute(
                f"SELECT nextval(pg_get_serial_sequence(%s, 'id')),"
                f" (SELECT event_hash FROM {table} ORDER BY id DESC LIMIT 1)"
                " FROM generate_series(1, %s)",
                [AuditEvent._meta.db_table, count],
            )
            rows = cursor.fetchall()
            return rows[0][1] or AUDIT_GENESIS_HASH, sorted(row[0] for row in rows)
        # SQLite writes one transaction at a time (and the unique prev_hash refuses a fork if two ever raced).
        cursor.execute(f"SELECT id, event_hash FROM {table} ORDER BY id DESC LIMIT 1")
        row = cursor.fetchone()
        last_id, head = row if row is not None else (0, AUDIT_GENESIS_HASH)
        return head, list(range(last_id + 1, last_id + 1 + count))


def audit_insert(events: Sequence[AuditEvent]) -> None:
    """Store unsaved events (from `audit_event`), chained in their order after the last stored event: the one way
    an event is stored. One lock and one read of the head per call, however many events."""
    if not events:
        return
    using = router.db_for_write(AuditEvent)
    # No savepoint of its own: an event that cannot be stored fails the write it records.
    with transaction.atomic(using=using, savepoint=False):
        prev_hash, ids = _chain_head(connections[using], len(events))
        for event, pk in zip(events, ids, strict=True):
            event.pk = pk
            # Hashed as they will read back: through JSON text, as the JSONField writes them.
            event.before, event.after = json.loads(json.dumps(event.before)), json.loads(json.dumps(event.after))
            event.prev_hash = prev_hash
            event.event_hash = prev_hash = audit_chain_digest(
                {name: getattr(event, name) for name in CHAIN_FIELDS}, prev_hash
            )
        AuditEvent.objects.using(using).bulk_create(events, batch_size=CHAIN_CHUNK)
