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

Events are stored by `chats.services.audit_chain.audit_insert`, which chains each after the last stored event; the
chain is walked and checked against its checkpoints by `chats.services.audit_verification`.
"""

from __future__ import annotations

import functools
import getpass
import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import router, transaction
from django.db.models import Model
from django.db.models.deletion import Collector

from chats.audit_actions import AuditAction
from chats.models import AuditEvent, Source
from chats.services.audit_chain import audit_insert

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
    if all(getattr(obj, name) == value for name, value in values.items()):
        return False
    with transaction.atomic(), audit_scope():
        return audited_set(obj, values, actor=actor)


def audited_set(
    obj: Model,
    values: dict[str, Any],
    *,
    actor: Actor,
    action: AuditAction | None = None,
    target_id: object = None,
    conversation_uuid: str | uuid.UUID | None = None,
) -> bool:
    """Within an audited write: set the fields named in `values` and record `action` ("<model>.updated" unless
    given) on the row (`target_id`: its primary key unless given) with those fields before and after; nothing is
    written when none changes. Whether anything changed."""
    before = {name: getattr(obj, name) for name in values}
    if before == values:
        return False
    for name, value in values.items():
        setattr(obj, name, value)
    obj.save(update_fields=list(values))
    model = str(obj._meta.model_name)
    audit_record(
        actor=actor,
        action=AuditAction.row(model, "updated") if action is None else action,
        target_type=model,
        target_id=obj.pk if target_id is None else target_id,
        conversation_uuid=conversation_uuid,
        before=before,
        after=values,
    )
    return True


# --- events ---------------------------------------------------------------------------------------------------


# A target's state, as an event records it: field names and their values.
JSONMap = Mapping[str, Any]


class EventFields(TypedDict):
    """What an audit event records: who did what to which target; the conversation it concerns, and the state
    before and after, when there are such."""

    actor: Actor
    action: AuditAction
    target_type: str
    target_id: object
    conversation_uuid: NotRequired[str | uuid.UUID | None]
    before: NotRequired[object]
    after: NotRequired[object]


def audit_event(**fields: Unpack[EventFields]) -> AuditEvent:
    """An unsaved event (the bulk writer inserts many at once); `audit_record` saves one."""
    actor = fields["actor"]
    return AuditEvent(
        actor=actor if isinstance(actor, User) else None,
        # A copy of who it was, which also names a source acting by its key ("source:masterbrain").
        actor_username=actor.get_username()[:150] if actor is not None else "",
        action=str(fields["action"]),  # stored as its value
        target_type=fields["target_type"],
        target_id=str(fields["target_id"]),
        conversation_uuid=fields.get("conversation_uuid"),
        before=fields.get("before"),
        after=fields.get("after"),
    )


def audit_record(**fields: Unpack[EventFields]) -> AuditEvent:
    """Record one event (`audit_event`, saved)."""
    event = audit_event(**fields)
    audit_insert([event])
    return event


def audit_record_changes(
    *, actor: Actor, action: AuditAction, target_type: str, target_id: object, before: JSONMap, after: JSONMap
) -> AuditEvent:
    """Record a change of a target's state (`before` and `after`: the same keys), with only the keys whose values
    changed."""
    changed = [key for key in after if after[key] != before[key]]
    return audit_record(
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        before={key: before[key] for key in changed},
        after={key: after[key] for key in changed},
    )


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


def _secret_state(value: object) -> str:
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
