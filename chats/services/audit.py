"""The audit trail: who changed what, when, with the values before and after.

Every state change a person, a key or a command makes writes one event: who (a user, a source by its key, or a
management command), what, on which target, and the values before and after. On PostgreSQL triggers keep the
table append-only (migration 0005) and refuse TRUNCATE (migration 0024). Ingestion writes one event per conversation
created or changed, not per message; a document that changes nothing, or is refused, leaves only its receipt.

There is one way to make an audited change, whoever makes it:
- the services' own writes are functions decorated with `audited_write`, which write their events themselves
  (`audit_record`), with the values that mean something for the action;
- any other change to a row (the admin's forms, the commands' accounts) goes through `audited(obj, actor=...)`
  or `audited_delete(obj, actor=...)`, which snapshot the row, let the caller change it, and record the difference.

Both mark the running code as inside an audited write (`in_audited_write`); the audit-completeness test fails any
write to an audited model made outside one.

The log is a hash chain, so that an edit made around the trigger (by a superuser) is evident. Every event is stored
by `audit_insert`, which chains it after the last stored event: its `prev_hash` is that event's hash, and its
`event_hash` is the SHA-256 of its canonical content (`audit_chain_digest`) with `prev_hash`. Chain order is id
order: on PostgreSQL `audit_insert` takes a transaction-level advisory lock before it reads the head and takes ids
from the sequence, and holds it to commit, so that two writers never follow the same event (a unique constraint on
`prev_hash` refuses a fork anyway). The lock serializes audited writes from that point to commit: write an event
last in its transaction. `audit_chain_verify` (the verify_audit command) walks the chain and records the outcome as
an event of its own.

A chain cannot tell that it was cut short, emptied and begun again, or rewritten and re-hashed as a whole: each is a
chain too. So the heads the walk finds intact are kept as checkpoints (AuditCheckpoint: event count and hash), in a
table the chain cannot rewrite (append-only and never truncated on PostgreSQL, migration 0024, like the log itself),
and printed for an operator to keep outside the database. Every walk checks the chain against each of them, and
against the heads an operator gives back (`verify_audit --expect`): the chain's event number N still has the hash
recorded for N.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import heapq
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.deletion import Collector

from chats.audit_actions import AuditAction
from chats.models import AUDIT_GENESIS_HASH, AuditCheckpoint, AuditEvent, Source

UserLike = User | AnonymousUser | None


class Principal(Protocol):
    """Anyone who acts without being a user, such as a source authenticated by its API key."""

    def get_username(self) -> str: ...


Actor = UserLike | Principal

# Fields whose values never reach the audit log: that they changed is recorded, never what they hold.
SECRET_FIELDS = frozenset({"password", "key_hash"})


@dataclass(frozen=True)
class CommandActor:
    """Whoever runs a management command on the server: named by the command and the system account."""

    command: str

    def get_username(self) -> str:
        try:
            account = getpass.getuser()
        except (KeyError, OSError):  # no such account in a bare container
            account = ""
        return f"command:{self.command}" + (f" ({account})" if account else "")


@dataclass(frozen=True)
class SourceActor:
    """A source writing by its API key, named as the API names it ("source:masterbrain")."""

    source: Source

    def get_username(self) -> str:
        return f"source:{self.source.name}"


# --- the scope of an audited write ----------------------------------------------------------------------------

_depth: ContextVar[int] = ContextVar("audited_write_depth", default=0)


@contextmanager
def audit_scope() -> Iterator[None]:
    """A block whose writes record their own audit events (the services' writers); see `audited_write`."""
    token = _depth.set(_depth.get() + 1)
    try:
        yield
    finally:
        _depth.reset(token)


def in_audited_write() -> bool:
    """Whether the running code is inside a service's write or an `audited` block."""
    return _depth.get() > 0


def audited_write[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """A service that writes its own audit events: one transaction, marked as an audited write."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with transaction.atomic(), audit_scope():
            return function(*args, **kwargs)

    return wrapper


@contextmanager
def audited[M: Model](obj: M, *, actor: Actor, before: dict[str, Any] | None = None) -> Iterator[M]:
    """Change `obj` (and its many-to-many sets) inside the block, and save it there; on leaving, one event records
    the row when it was new, or the fields that changed, before and after.

    `before` is the stored row's snapshot when the caller's object already carries unsaved changes (an admin form
    has applied its values to it); by default it is taken from `obj` as it is on entering.
    """
    if before is None and obj.pk is not None and not obj._state.adding:
        before = audit_snapshot(obj)
    with transaction.atomic(), audit_scope():
        yield obj
        audit_record_saved(actor=actor, obj=obj, before=before)


def audited_delete(obj: Model, *, actor: Actor) -> AuditEvent:
    """Delete `obj` (and what the deletion takes along), recording the whole row and the ids of the rest."""
    with transaction.atomic(), audit_scope():
        before = audit_snapshot(obj, deleting=True)
        obj.delete()
        return audit_record_deleted(actor=actor, model=type(obj), before=before)


def audited_update(obj: Model, values: dict[str, Any], *, actor: Actor) -> bool:
    """Set the fields named in `values` and record "<model>.updated" with those fields before and after; nothing
    is written when none changes. Whether anything changed."""
    before = {name: getattr(obj, name) for name in values}
    if before == values:
        return False
    with transaction.atomic(), audit_scope():
        for name, value in values.items():
            setattr(obj, name, value)
        obj.save(update_fields=list(values))
        model = str(obj._meta.model_name)
        audit_record(
            actor=actor,
            action=AuditAction.row(model, "updated"),
            target_type=model,
            target_id=obj.pk,
            before=before,
            after=values,
        )
    return True


# --- events ---------------------------------------------------------------------------------------------------


def audit_event(
    *,
    actor: Actor,
    action: AuditAction,
    target_type: str,
    target_id: Any,
    conversation_uuid: Any = None,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    """An unsaved event (the bulk writer inserts many at once); `audit_record` saves one."""
    user = actor if isinstance(actor, User) else None
    return AuditEvent(
        actor=user,
        # A copy of who it was, which also names a source acting by its key ("source:masterbrain").
        actor_username=actor.get_username()[:150] if actor is not None else "",
        action=str(action),  # stored as its value
        target_type=target_type,
        target_id=str(target_id),
        conversation_uuid=conversation_uuid,
        before=before,
        after=after,
    )


def audit_record(
    *,
    actor: Actor,
    action: AuditAction,
    target_type: str,
    target_id: Any,
    conversation_uuid: Any = None,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    event = audit_event(
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        conversation_uuid=conversation_uuid,
        before=before,
        after=after,
    )
    audit_insert([event])
    return event


def jsonable(value: Any) -> Any:
    """Times, dates, UUIDs and decimals as the JSON text they are stored as."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _related_names(manager: Any) -> list[str]:
    if manager.model is Permission:
        # "auth.change_user": one query, where a permission's own name would read its content type each time.
        return sorted(
            f"{app}.{codename}" for app, codename in manager.values_list("content_type__app_label", "codename")
        )
    return sorted(str(related) for related in manager.all())


def audit_snapshot(obj: Model, *, deleting: bool = False) -> dict[str, Any]:
    """The audited values of a row: every concrete field (a foreign key as its id) and many-to-many set.

    Secret fields keep their value here, so that a change can be told; audit_record_saved and audit_record_deleted
    write only whether they are set. `deleting`: also the ids of the rows the deletion takes with it.
    """
    values: dict[str, Any] = {}
    for f in obj._meta.concrete_fields:
        value = f.value_from_object(obj)
        # The admin's date and time inputs keep whole seconds: a save that only drops the fraction changes nothing.
        values[f.name] = value.replace(microsecond=0) if isinstance(value, datetime) else value
    for f in obj._meta.many_to_many:
        values[f.name] = _related_names(getattr(obj, f.name)) if obj.pk is not None else []
    if deleting:
        cascade = _cascade_of(obj)
        if cascade:
            values["also_deleted"] = cascade
    result: dict[str, Any] = jsonable(values)
    return result


def _cascade_of(obj: Model) -> dict[str, list[Any]]:
    """The rows deleting `obj` deletes too (a staff member's admin log entries), by model and id."""
    collector = Collector(using=router.db_for_write(type(obj)), origin=obj)
    collector.collect([obj])
    found: dict[str, list[Any]] = {}
    for model, instances in collector.data.items():
        if model is not type(obj) and not model._meta.auto_created:
            found[model._meta.label_lower] = sorted(instance.pk for instance in instances)
    for queryset in collector.fast_deletes:
        if not queryset.model._meta.auto_created:  # many-to-many links are in the snapshot already
            found.setdefault(queryset.model._meta.label_lower, []).extend(queryset.values_list("pk", flat=True))
    return {label: sorted(pks) for label, pks in found.items() if pks}


def _secret_state(value: Any) -> str:
    if not value:
        return "(none)"
    return "(unusable)" if str(value).startswith(UNUSABLE_PASSWORD_PREFIX) else "(set)"


def _without_secrets(values: dict[str, Any]) -> dict[str, Any]:
    return {name: _secret_state(value) if name in SECRET_FIELDS else value for name, value in values.items()}


def audit_record_saved(*, actor: Actor, obj: Model, before: dict[str, Any] | None) -> AuditEvent | None:
    """`obj` was created (`before` is None: the whole row is recorded) or changed (the fields that changed, with
    their values before and after; nothing is recorded when none did). Called by `audited` once `obj` and its
    many-to-many sets are saved."""
    after = audit_snapshot(obj)
    name = obj._meta.model_name or type(obj).__name__.lower()
    if before is None:
        return audit_record(
            actor=actor,
            action=AuditAction.row(name, "created"),
            target_type=name,
            target_id=obj.pk,
            after=_without_secrets(after),
        )
    changed = [key for key, value in after.items() if before.get(key) != value]
    if not changed:
        return None
    old = {key: before.get(key) for key in changed}
    new = {key: after[key] for key in changed}
    for key in SECRET_FIELDS.intersection(changed):
        old[key], new[key] = _secret_state(old[key]), _secret_state(new[key])
        if old[key] == new[key]:
            new[key] = "(changed)"
    return audit_record(
        actor=actor, action=AuditAction.row(name, "updated"), target_type=name, target_id=obj.pk, before=old, after=new
    )


def audit_record_deleted(*, actor: Actor, model: type[Model], before: dict[str, Any]) -> AuditEvent:
    """A row was deleted; `before` is its audit_snapshot(deleting=True), taken before the deletion."""
    name = model._meta.model_name or model.__name__.lower()
    return audit_record(
        actor=actor,
        action=AuditAction.row(name, "deleted"),
        target_type=name,
        target_id=before[model._meta.pk.name],
        before=_without_secrets(before),
    )


# --- the hash chain -------------------------------------------------------------------------------------------

# The fields an event's hash covers, as stored. Not `actor_id`: deleting a user sets it to NULL (the one change the
# append-only trigger lets through), and `actor_username` keeps who it was.
CHAIN_FIELDS = (
    "id",
    "actor_username",
    "action",
    "target_type",
    "target_id",
    "conversation_uuid",
    "before",
    "after",
    "created_at",
)
# pg_advisory_xact_lock's key for "appending to the audit chain"; any constant no other lock in the database uses.
CHAIN_LOCK_KEY = 0x6D62_6175_6469_7401
# Events inserted per statement, and read per round trip when the chain is walked.
CHAIN_CHUNK = 2000


def _stored_json(value: Any) -> Any:
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


@dataclass(frozen=True)
class ChainMark:
    """A head of the chain known to be intact once: event number `events` (counted from the start of the chain) had
    hash `head_hash`. A stored AuditCheckpoint, or one an operator kept outside the database (`verify_audit
    --expect`); `origin` names it in a failure."""

    events: int
    head_hash: str
    origin: str


@dataclass(frozen=True)
class ChainCheck:
    """The outcome of a walk along the chain: how many events were intact, up to which, and the first problem.

    A break inside the chain names the first event that does not fit (`broken_id`), and the events before it are
    intact. A chain that disagrees with a checkpoint (cut short, emptied, or rewritten and re-hashed as a whole)
    is known intact only up to the last checkpoint it agreed with; `broken_id` is then the event that disagrees,
    or None when the log ends before the checkpoint's count."""

    events_checked: int  # the intact events: before the first break, or up to the last checkpoint agreed with
    last_id: int | None  # the last intact event
    last_hash: str
    broken_id: int | None = None
    problem: str = ""
    checkpoints_matched: int = 0  # the checkpoints and expected heads the chain agreed with
    disagrees_with: str = ""  # the checkpoint or expected head the chain does not agree with, when one

    @property
    def ok(self) -> bool:
        return self.broken_id is None and not self.problem


def _stored_marks() -> Iterator[ChainMark]:
    """Every stored checkpoint, in chain order (by its count), read a chunk at a time."""
    rows = AuditCheckpoint.objects.order_by("events", "id").values_list("id", "events", "head_hash", "created_at")
    for pk, events, head_hash, created_at in rows.iterator(chunk_size=CHAIN_CHUNK):
        yield ChainMark(
            events, head_hash, f"checkpoint {pk} (recorded {created_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC)"
        )


def audit_chain_check(*, expected: Iterable[ChainMark] = ()) -> ChainCheck:
    """Walk the chain in id order and stop at the first event whose hash is not the hash of its content, or which
    does not follow the event before it; and check it against every stored checkpoint and every `expected` head:
    the chain's event number `events` has that hash, so the chain up to it is the one the checkpoint saw.

    One pass over the events and one over the checkpoints, side by side (both in chain order): a constant amount
    of memory however long either is, beyond the `expected` heads given."""
    marks = heapq.merge(_stored_marks(), sorted(expected, key=lambda mark: mark.events), key=lambda m: m.events)
    mark = next(marks, None)
    expected_hash, last_id, checked, matched = AUDIT_GENESIS_HASH, None, 0, 0
    agreed: tuple[int, int | None, str] = (0, None, AUDIT_GENESIS_HASH)  # the last checkpoint the chain agreed with
    rows = AuditEvent.objects.order_by("id").values_list(*CHAIN_FIELDS, "prev_hash", "event_hash")
    for row in rows.iterator(chunk_size=CHAIN_CHUNK):
        fields = dict(zip(CHAIN_FIELDS, row, strict=False))
        pk, prev_hash, event_hash = fields["id"], row[-2], row[-1]
        if audit_chain_digest(fields, prev_hash) != event_hash:
            problem = f"event {pk} does not match its hash: it was changed after it was written"
            if not event_hash:
                problem = f"event {pk} has no hash: it was written around the audit service"
            return ChainCheck(checked, last_id, expected_hash, pk, problem, matched)
        if prev_hash != expected_hash:
            after = f"event {last_id}" if last_id is not None else "the start of the chain"
            problem = (
                f"event {pk} does not follow {after}: an event before it was removed, or {after} was rewritten "
                "with a new hash"
            )
            return ChainCheck(checked, last_id, expected_hash, pk, problem, matched)
        expected_hash, last_id, checked = event_hash, pk, checked + 1
        while mark is not None and mark.events == checked:
            if mark.head_hash != event_hash:
                problem = (
                    f"event {pk}, number {checked} of the chain, has hash {event_hash}, but {mark.origin} recorded "
                    f"{mark.head_hash} there: the chain up to it was rewritten (or replaced) since"
                )
                return ChainCheck(*agreed, pk, problem, matched, mark.origin)
            agreed, matched, mark = (checked, pk, event_hash), matched + 1, next(marks, None)
    if mark is not None:
        problem = (
            f"the log holds {checked} event(s), but {mark.origin} counted {mark.events}, the last with hash "
            f"{mark.head_hash}: events were removed from its end, or it was emptied and begun again"
        )
        return ChainCheck(*agreed, None, problem, matched, mark.origin)
    return ChainCheck(checked, last_id, expected_hash, checkpoints_matched=matched)


def audit_chain_verify(
    *, actor: Actor, expected: Iterable[ChainMark] = (), checkpoint: bool = True
) -> tuple[ChainCheck, AuditCheckpoint | None]:
    """Walk the chain (`audit_chain_check`, against the stored checkpoints and the `expected` heads) and record the
    outcome, intact or not, as an event of its own. When the chain is intact and holds events, and `checkpoint`,
    its head as walked becomes a new checkpoint (returned): the next walk checks it, and an operator keeps it
    outside the database (`<events>:<head_hash>`) for `verify_audit --expect`.

    The checkpoint is the head the walk verified, not the event recording the walk (which follows it, with any
    event written meanwhile): the next walk verifies those."""
    check = audit_chain_check(expected=expected)
    with transaction.atomic(using=router.db_for_write(AuditCheckpoint)):
        audit_record(
            actor=actor,
            action=AuditAction.AUDIT_VERIFIED,
            target_type="audit_chain",
            target_id="all",
            after={
                "ok": check.ok,
                "events_checked": check.events_checked,
                "last_id": check.last_id,
                "last_hash": check.last_hash,
                "broken_id": check.broken_id,
                "problem": check.problem,
            },
        )
        if not (checkpoint and check.ok and check.last_id is not None):
            return check, None
        recorded = AuditCheckpoint.objects.create(
            events=check.events_checked,
            last_event_id=check.last_id,
            head_hash=check.last_hash,
            recorded_by=actor.get_username()[:150] if actor is not None else "",
        )
    return check, recorded
