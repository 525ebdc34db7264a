"""Every write with side effects: ingestion, feedback, review status, sources, keys, labels, and the audit trail.

Views, serializers, forms, commands and the admin translate input and output and call these functions; nothing
else writes conversations, feedback or audit events.
"""

from __future__ import annotations

import getpass
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, router, transaction
from django.db.models import Count, Model, Q
from django.db.models.deletion import Collector
from django.utils import timezone

from chats import ingest
from chats.ingest import canonical as c
from chats.ingest.chatgpt_export import apply_message_feedback
from chats.models import (
    ApiKey,
    AuditEvent,
    ContentForm,
    Conversation,
    Feedback,
    FeedbackLabel,
    FeedbackOrigin,
    IngestionReceipt,
    InjectedArtifact,
    Label,
    Message,
    Outcome,
    ReviewStatus,
    Source,
    ToolCall,
)

UserLike = User | AnonymousUser | None


class Principal(Protocol):
    """Anyone who acts without being a user, such as a source authenticated by its API key."""

    def get_username(self) -> str: ...


Actor = UserLike | Principal

# Full-text search indexes this many characters of a conversation (a tsvector is capped at 1 MB).
SEARCH_TEXT_LIMIT = 250_000


# --------------------------------------------------------------------------------------------------------------
# Audit
#
# Every state change a person or a key makes writes one event: who (a user, a source by its key, or a management
# command), what, on which target, and the values before and after. On PostgreSQL a trigger keeps the table
# append-only (migration 0005). Ingestion writes one event per conversation created or changed, not per message;
# a document that changes nothing, or is refused, leaves only its receipt.

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


def _audit_event(
    *,
    actor: Actor,
    action: str,
    target_type: str,
    target_id: Any,
    conversation_uuid: Any = None,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    user = actor if isinstance(actor, User) else None
    return AuditEvent(
        actor=user,
        # A copy of who it was, which also names a source acting by its key ("source:masterbrain").
        actor_username=actor.get_username()[:150] if actor is not None else "",
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        conversation_uuid=conversation_uuid,
        before=before,
        after=after,
    )


def audit_record(
    *,
    actor: Actor,
    action: str,
    target_type: str,
    target_id: Any,
    conversation_uuid: Any = None,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    event = _audit_event(
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        conversation_uuid=conversation_uuid,
        before=before,
        after=after,
    )
    event.save(force_insert=True)
    return event


def _jsonable(value: Any) -> Any:
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
    return _jsonable(values)


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
    their values before and after; nothing is recorded when none did). Call it once `obj` and its many-to-many
    sets are saved, with `before` from audit_snapshot."""
    after = audit_snapshot(obj)
    name = obj._meta.model_name or type(obj).__name__.lower()
    if before is None:
        return audit_record(
            actor=actor, action=f"{name}.created", target_type=name, target_id=obj.pk, after=_without_secrets(after)
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
        actor=actor, action=f"{name}.updated", target_type=name, target_id=obj.pk, before=old, after=new
    )


def audit_record_deleted(*, actor: Actor, model: type[Model], before: dict[str, Any]) -> AuditEvent:
    """A row was deleted; `before` is its audit_snapshot(deleting=True), taken before the deletion."""
    name = model._meta.model_name or model.__name__.lower()
    return audit_record(
        actor=actor,
        action=f"{name}.deleted",
        target_type=name,
        target_id=before[model._meta.pk.name],
        before=_without_secrets(before),
    )


# --------------------------------------------------------------------------------------------------------------
# Sources and keys


@transaction.atomic
def source_get_or_create(
    *, name: str, description: str = "", is_active: bool = True, actor: Actor = None
) -> tuple[Source, bool]:
    """The source named `name`; created (with `description` and `is_active`) when there is none."""
    source, created = Source.objects.get_or_create(
        name=name, defaults={"description": description, "is_active": is_active}
    )
    if created:
        audit_record(
            actor=actor,
            action="source.created",
            target_type="source",
            target_id=source.pk,
            after={"name": name, "description": description, "is_active": is_active},
        )
    return source, created


def _fields_update(obj: Source | Label, after: dict[str, Any], *, actor: Actor) -> None:
    """Set the fields named in `after` and audit the change ("<model>.updated"); nothing when none changes."""
    before = {field_name: getattr(obj, field_name) for field_name in after}
    if before == after:
        return
    for field_name, value in after.items():
        setattr(obj, field_name, value)
    obj.save(update_fields=list(after))
    model = str(obj._meta.model_name)
    audit_record(
        actor=actor, action=f"{model}.updated", target_type=model, target_id=obj.pk, before=before, after=after
    )


@transaction.atomic
def source_update(*, source: Source, description: str, is_active: bool, actor: Actor = None) -> None:
    _fields_update(source, {"description": description, "is_active": is_active}, actor=actor)


@transaction.atomic
def api_key_create(
    *,
    source: Source | None = None,
    user: User | None = None,
    name: str = "",
    expires_at: datetime | None = None,
    actor: Actor = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the secret, which is never stored and cannot be shown again."""
    raw_key = ApiKey.generate()
    key = ApiKey.objects.create(
        source=source,
        user=user,
        name=name,
        prefix=raw_key[3 : 3 + ApiKey.PREFIX_LENGTH],
        key_hash=ApiKey.hash_key(raw_key),
        expires_at=expires_at,
    )
    owner = f"source:{source.name}" if source else f"user:{user.get_username() if user else ''}"
    audit_record(
        actor=actor,
        action="api_key.created",
        target_type="api_key",
        target_id=key.pk,
        after={
            "owner": owner,
            "prefix": key.prefix,
            "name": name,
            "expires_at": expires_at.isoformat() if expires_at else None,
        },
    )
    return key, raw_key


@transaction.atomic
def api_key_revoke(*, key: ApiKey, actor: UserLike = None) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            action="api_key.revoked",
            target_type="api_key",
            target_id=key.pk,
            before={"revoked": False},
            after={"revoked": True},
        )


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    key = ApiKey.objects.usable().select_related("source", "user").filter(key_hash=ApiKey.hash_key(raw_key)).first()
    if key is None or (key.source is not None and not key.source.is_active):
        return None
    return key


# --------------------------------------------------------------------------------------------------------------
# Labels


def _label_values(label: Label) -> dict[str, Any]:
    return {"name": label.name, "description": label.description}


@transaction.atomic
def label_create(*, name: str, description: str = "", actor: Actor = None) -> Label:
    label = Label.objects.create(name=name, description=description)
    audit_record(
        actor=actor, action="label.created", target_type="label", target_id=label.pk, after=_label_values(label)
    )
    return label


@transaction.atomic
def label_update(*, label: Label, name: str, description: str, actor: Actor = None) -> None:
    """Rename or redescribe a label; feedback that carries it carries the new name."""
    _fields_update(label, {"name": name, "description": description}, actor=actor)


@transaction.atomic
def label_delete(*, label: Label, actor: Actor = None) -> None:
    """Delete a label no feedback carries (a label in use is protected, and this raises ProtectedError)."""
    before = _label_values(label)
    pk = label.pk
    label.delete()
    audit_record(actor=actor, action="label.deleted", target_type="label", target_id=pk, before=before)


# --------------------------------------------------------------------------------------------------------------
# Ingestion


class LimitExceeded(Exception):
    """A document is over a configured limit (HTTP 413)."""

    def __init__(self, issue: c.Issue):
        self.issue = issue
        super().__init__(issue.message)


@dataclass
class IngestResult:
    outcome: str
    format: str
    external_id: str
    receipt: IngestionReceipt
    conversation: Conversation | None = None
    warnings: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    messages_added: int = 0
    over_limit: bool = False


def payload_hash(document: Any) -> str:
    return hashlib.sha256(c.canonical_json(document).encode()).hexdigest()


def conversation_ingest(
    *,
    source: Source,
    document: Any,
    format: str | None = None,
    external_id: str | None = None,
    api_key: ApiKey | None = None,
    size_bytes: int | None = None,
    message_feedback: list[dict[str, Any]] | None = None,
    actor: Actor = None,
) -> IngestResult:
    """Store one conversation document: whole or not at all, idempotently, and leave a receipt either way.

    `actor` is who sends it when that is not the source itself by its key (a command importing files).
    """
    text = c.canonical_json(document)
    try:
        encoded = text.encode()
        has_surrogate = False
    except UnicodeEncodeError:
        # json.loads accepts an unpaired surrogate escape ("\ud800"); no UTF-8 text can hold one.
        encoded = text.encode(errors="surrogatepass")
        has_surrogate = True
    digest = hashlib.sha256(encoded).hexdigest()
    if size_bytes is None:
        size_bytes = len(encoded)
    unstorable = _find_unstorable(document) if has_surrogate or "\\u0000" in text else None
    if unstorable is not None:
        # PostgreSQL stores neither in text or JSON; refuse rather than alter what was sent.
        return _reject(
            source,
            api_key,
            None,
            digest,
            size_bytes,
            format or "",
            external_id or "",
            [c.Issue(*unstorable)],
            payload_text=encoded.decode(errors="backslashreplace"),
        )
    try:
        parsed = ingest.parse_document(document, format=format)
        _check_limits(parsed)
    except c.ParseError as error:
        return _reject(source, api_key, document, digest, size_bytes, format or "", external_id or "", error.errors)
    except LimitExceeded as error:
        result = _reject(source, api_key, document, digest, size_bytes, format or "", external_id or "", [error.issue])
        result.over_limit = True
        return result
    if message_feedback:
        # A ChatGPT export's message_feedback.json: thumbs on the messages it names.
        parsed.warnings.extend(apply_message_feedback([parsed], message_feedback))
    return conversation_store(
        source=source,
        parsed=parsed,
        document=document,
        digest=digest,
        size_bytes=size_bytes,
        external_id=external_id,
        api_key=api_key,
        actor=actor,
    )


def conversation_store(
    *,
    source: Source,
    parsed: c.Conversation,
    document: Any,
    digest: str,
    size_bytes: int,
    external_id: str | None = None,
    api_key: ApiKey | None = None,
    actor: Actor = None,
) -> IngestResult:
    """Store an already parsed conversation (see conversation_ingest)."""
    generated = False
    ext_id = parsed.external_id or external_id
    if not ext_id:
        # No id in the document and none given: derive one from the content, so a resend is recognised.
        ext_id, generated = "gen-" + digest[:32], True
    ext_id = str(ext_id)[:255]
    warnings = [w.as_dict() for w in parsed.warnings]
    try:
        with transaction.atomic():
            conversation, outcome, added, store_warnings, before = _store(source, parsed, ext_id, generated)
            warnings.extend(store_warnings)
            receipt = _receipt(
                source,
                api_key,
                document,
                digest,
                size_bytes,
                parsed.format,
                ext_id,
                outcome,
                warnings,
                [],
                conversation,
                added,
            )
            if outcome != Outcome.UNCHANGED:
                _ingest_event(
                    actor=actor,
                    source=source,
                    api_key=api_key,
                    conversation=conversation,
                    receipt=receipt,
                    added=added,
                    before=before,
                ).save(force_insert=True)
    except c.ParseError as error:
        return _reject(source, api_key, document, digest, size_bytes, parsed.format, ext_id, error.errors)
    return IngestResult(
        outcome=outcome,
        format=parsed.format,
        external_id=ext_id,
        receipt=receipt,
        conversation=conversation,
        warnings=warnings,
        messages_added=added,
    )


def _unstorable_reason(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored; remove or escape it"
    try:
        text.encode()
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate (such as \\ud800), which is not text; send valid UTF-8"
    return None


def _find_unstorable(value: Any, path: str = "") -> tuple[str, str] | None:
    """The JSON pointer of the first string (or key) that PostgreSQL cannot store, and why."""
    if isinstance(value, str):
        reason = _unstorable_reason(value)
        return (path, reason) if reason else None
    if isinstance(value, dict):
        for key, item in value.items():
            # The pointer itself must be storable (it goes into the receipt): escape what the key cannot hold.
            shown = str(key).replace("\x00", "\\u0000").encode(errors="backslashreplace").decode()
            sub = f"{path}/{shown.replace('~', '~0').replace('/', '~1')}"
            reason = _unstorable_reason(str(key))
            found = (sub, reason) if reason else _find_unstorable(item, sub)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find_unstorable(item, f"{path}/{index}")
            if found is not None:
                return found
    return None


def _check_limits(parsed: c.Conversation) -> None:
    limit = settings.MASTERBRAIN_MAX_MESSAGES
    if len(parsed.messages) > limit:
        raise LimitExceeded(c.Issue("", f"{len(parsed.messages)} messages: at most {limit} per conversation."))


def _reject(
    source: Source,
    api_key: ApiKey | None,
    document: Any,
    digest: str,
    size_bytes: int,
    fmt: str,
    ext_id: str,
    errors: Sequence[c.Issue],
    *,
    payload_text: str = "",
) -> IngestResult:
    error_dicts = [e.as_dict() for e in errors]
    receipt = _receipt(
        source,
        api_key,
        document,
        digest,
        size_bytes,
        fmt,
        ext_id,
        Outcome.REJECTED,
        [],
        error_dicts,
        None,
        0,
        payload_text=payload_text,
    )
    return IngestResult(outcome=Outcome.REJECTED, format=fmt, external_id=ext_id, receipt=receipt, errors=error_dicts)


def receipt_reject_raw(
    *, source: Source, api_key: ApiKey | None, body: bytes, errors: Sequence[c.Issue]
) -> IngestionReceipt:
    """A receipt for a body that could not even be decoded, kept as text so that nothing is lost."""
    return IngestionReceipt.objects.create(
        source=source,
        api_key=api_key,
        outcome=Outcome.REJECTED,
        payload=None,
        # The hash is of the exact bytes; the text keeps them readable (PostgreSQL text cannot hold NUL).
        payload_text=body.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00"),
        payload_sha256=hashlib.sha256(body).hexdigest(),
        size_bytes=len(body),
        errors=[e.as_dict() for e in errors],
    )


def _receipt(
    source: Source,
    api_key: ApiKey | None,
    document: Any,
    digest: str,
    size_bytes: int,
    fmt: str,
    ext_id: str,
    outcome: str,
    warnings: list[dict[str, str]],
    errors: list[dict[str, str]],
    conversation: Conversation | None,
    added: int,
    *,
    payload_text: str = "",  # the document as text, when it cannot be stored as JSON
) -> IngestionReceipt:
    return IngestionReceipt.objects.create(
        source=source,
        api_key=api_key,
        conversation=conversation,
        external_id=ext_id,
        input_format=fmt,
        outcome=outcome,
        payload=document,
        payload_text=payload_text,
        payload_sha256=digest,
        size_bytes=size_bytes,
        messages_added=added,
        warnings=warnings,
        errors=errors,
    )


# A conversation's state as its ingestion audit events show it, before and after.
_INGEST_STATE = ("message_count", "branch_count", "active_leaf_key", "feedback_count", "score_up", "score_down")


def _ingest_state(conversation: Conversation) -> dict[str, Any]:
    return {name: getattr(conversation, name) for name in _INGEST_STATE}


def _ingest_event(
    *,
    actor: Actor,
    source: Source,
    api_key: ApiKey | None,
    conversation: Conversation,
    receipt: IngestionReceipt,
    added: int,
    before: dict[str, Any] | None,
) -> AuditEvent:
    """The one audit event of a document that created or changed a conversation (unsaved: the bulk path inserts
    many at once). `before` is None for a conversation just created, else its state and the values of the fields
    the document changed."""
    after = _ingest_state(conversation)
    if before is None:
        action = "conversation.created"
        after |= {"external_id": conversation.external_id, "format": conversation.input_format}
    else:
        after |= {name: _jsonable(getattr(conversation, name)) for name in before if name not in after}
        if after["branch_count"] > before["branch_count"]:
            action = "conversation.branched"
        elif added:
            action = "conversation.appended"
        else:
            action = "conversation.updated"
    after |= {"messages_added": added, "receipt": str(receipt.uuid), "api_key": api_key.prefix if api_key else None}
    return _audit_event(
        actor=actor if actor is not None else SourceActor(source),
        action=action,
        target_type="conversation",
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
        before=before,
        after=after,
    )


@dataclass
class _Node:
    id: int
    parent_id: int | None
    depth: int
    role: str
    on_active_path: bool


def _conversation_fields(parsed: c.Conversation) -> dict[str, Any]:
    return {
        "input_format": parsed.format,
        "title": (parsed.title or "")[:500],
        "user_external_id": (parsed.user_id or "")[:255],
        "model_name": (parsed.model_name or "")[:200],
        "model_config": parsed.model,
        "started_at": parsed.started_at,
        "ended_at": parsed.ended_at,
        "scenario": parsed.scenario,
        "injection_context": parsed.injection_context,
        "context_pairs": parsed.context_pairs,
        "metadata": parsed.metadata,
    }


def _lock_conversation(
    source: Source, ext_id: str, parsed: c.Conversation, generated: bool
) -> tuple[Conversation, bool]:
    """Get the conversation row locked for this transaction, creating it if needed.

    Two requests creating the same conversation at once both try the INSERT; the unique constraint on
    (source, external_id) makes one wait and fail, and that one then finds and locks the winner's row.
    """
    now = timezone.now()
    defaults = _conversation_fields(parsed) | {
        "external_id_generated": generated,
        "last_activity_at": parsed.started_at or now,
        "created_at": now,
        "updated_at": now,
    }
    return Conversation.objects.select_for_update().get_or_create(source=source, external_id=ext_id, defaults=defaults)


def _allocate_ids(model: type[Message] | type[ToolCall], count: int) -> list[int]:
    """Reserve primary keys up front, so that a whole tree of messages is inserted in one statement."""
    if count == 0:
        return []
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count]
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite serialises writers, so the next ids are ours until this transaction ends.
        cursor.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{table}"')
        start = cursor.fetchone()[0] + 1
        return list(range(start, start + count))


def _content_form(message: c.Message) -> str:
    if message.content_is_null:
        return ContentForm.NULL
    return ContentForm.STRING if message.content_is_string else ContentForm.PARTS


def _store(
    source: Source, parsed: c.Conversation, ext_id: str, generated: bool
) -> tuple[Conversation, str, int, list[dict[str, str]], dict[str, Any] | None]:
    """Write the document's rows; also return the conversation's audited state before (None when created)."""
    conversation, created = _lock_conversation(source, ext_id, parsed, generated)
    before = None if created else _ingest_state(conversation)
    warnings: list[dict[str, str]] = []
    changed = created

    if not created and conversation.input_format != parsed.format:
        warnings.append(
            {
                "path": "",
                "message": f"conversation was stored as {conversation.input_format}; this document is {parsed.format}",
            }
        )

    nodes: dict[str, _Node] = {}
    max_position = -1
    if not created:
        for key, pk, stored_parent, depth, role, active, position in Message.objects.filter(
            conversation=conversation
        ).values_list("key", "id", "parent_id", "depth", "role", "on_active_path", "position"):
            nodes[key] = _Node(pk, stored_parent, depth, role, active)
            max_position = max(max_position, position)

    new_messages = [m for m in parsed.messages if m.key not in nodes]
    ids = _allocate_ids(Message, len(new_messages))
    now = timezone.now()
    children_of_parent: dict[int | None, int] = {}
    if new_messages and not created:
        for counted_parent, n in (
            Message.objects.filter(conversation=conversation).values_list("parent_id").annotate(n=Count("id"))
        ):
            children_of_parent[counted_parent] = n
    rows: list[Message] = []
    for offset, (message, pk) in enumerate(zip(new_messages, ids, strict=True)):
        parent = nodes.get(message.parent_key) if message.parent_key else None
        if message.parent_key and parent is None:
            raise c.ParseError(
                [c.Issue(message.source_path, f"parent {message.parent_key!r} is not in the conversation")]
            )
        parent_id = parent.id if parent else None
        sibling_index = children_of_parent.get(parent_id, 0)
        children_of_parent[parent_id] = sibling_index + 1
        depth = parent.depth + 1 if parent else 0
        nodes[message.key] = _Node(pk, parent_id, depth, message.role, False)
        rows.append(
            Message(
                id=pk,
                conversation=conversation,
                key=message.key[:255],
                parent_id=parent_id,
                position=max_position + 1 + offset,
                depth=depth,
                sibling_index=sibling_index,
                on_active_path=False,
                role=message.role[:64],
                name=(message.name or "")[:255],
                section=message.section,
                content_form=_content_form(message),
                parts=message.parts,
                text=message.text,
                reasoning=message.reasoning,
                context_pairs=message.context_pairs,
                author_metadata=message.author_metadata,
                sent_at=message.created_at,
                tool_call_id=(message.tool_call_id or "")[:255],
                hidden=message.hidden,
                recipient=(message.recipient or "")[:255],
                extra=message.extra,
                raw=message.raw,
                source_path=message.source_path[:255],
                created_at=now,
            )
        )
    Message.objects.bulk_create(rows, batch_size=500)
    added = len(rows)
    changed = changed or added > 0

    new_keys = {m.key for m in new_messages}
    calls_added, call_warnings = _store_tool_calls(conversation, parsed, nodes, new_keys, created)
    warnings.extend(call_warnings)
    artifacts_added = _store_artifacts(conversation, parsed, created)
    feedback_changed = _store_imported_feedback(conversation, parsed, nodes)

    # The active path: the input's own choice when it makes one (current_node), else the newest leaf it sent.
    # A document that adds nothing moves it only to a stored leaf: an older snapshot sent again (a retry that
    # arrives late) names what is now an inner message, and must not take the thread back to it.
    leaf_key = parsed.active_leaf_key or (parsed.messages[-1].key if parsed.messages else None)
    if (
        leaf_key
        and leaf_key in nodes
        and (added or (parsed.active_leaf_key and _is_leaf(nodes, leaf_key)))
        and leaf_key != conversation.active_leaf_key
    ):
        _set_active_path(conversation, nodes, leaf_key)
        changed = True

    fields = _conversation_fields(parsed)
    if not created:
        for name, value in fields.items():
            if name == "input_format":
                continue  # the format it first came in stays: exports in it give the original back
            if value not in (None, "", [], {}) and getattr(conversation, name) != value:
                assert before is not None
                before[name] = _jsonable(getattr(conversation, name))
                setattr(conversation, name, value)
                changed = True
    if changed or feedback_changed:
        _refresh_summary(conversation, nodes, parsed, added, calls_added, artifacts_added, feedback_changed)
        conversation.updated_at = now
        conversation.save()
    if added and connection.vendor == "postgresql":
        _refresh_search_vector(conversation)

    if created:
        outcome = Outcome.CREATED
    elif changed or feedback_changed:
        outcome = Outcome.UPDATED
    else:
        outcome = Outcome.UNCHANGED
    return conversation, outcome, added, warnings, before


def _store_tool_calls(
    conversation: Conversation,
    parsed: c.Conversation,
    nodes: dict[str, _Node],
    new_keys: set[str],
    created: bool,
) -> tuple[int, list[dict[str, str]]]:
    warnings: list[dict[str, str]] = []
    existing: dict[str, tuple[int, int | None]] = {}
    if not created:
        existing = {
            cid: (pk, res)
            for cid, pk, res in ToolCall.objects.filter(conversation=conversation).values_list(
                "call_id", "id", "result_message_id"
            )
        }

    # Which stored call each tool message of this document answers, by tool_call_id (never by position).
    answered_by: dict[str, int] = {}
    for message in parsed.messages:
        if message.tool_call_id and message.tool_call_id not in answered_by:
            answered_by[message.tool_call_id] = nodes[message.key].id

    rows: list[ToolCall] = []
    seen: set[str] = set(existing)
    for message in parsed.messages:
        if message.key not in new_keys:
            continue
        for call in message.tool_calls:
            call_id = call.call_id[:255]
            if call_id in seen:
                # The same id again in another message (a regenerated branch): keep both, told apart.
                call_id = f"{call.call_id}@{message.key}"[:255]
                warnings.append(
                    {
                        "path": message.source_path,
                        "message": f"tool call id {call.call_id!r} repeats an earlier call; stored as {call_id!r}",
                    }
                )
            seen.add(call_id)
            rows.append(
                ToolCall(
                    conversation=conversation,
                    message_id=nodes[message.key].id,
                    call_id=call_id,
                    index=call.index,
                    type=call.type[:32],
                    name=call.name[:255],
                    arguments=call.arguments,
                    parsed_arguments=call.parsed_arguments,
                    arguments_error=call.arguments_error,
                    result_message_id=answered_by.get(call.call_id),
                    extra=call.extra,
                )
            )
    if rows:
        ids = _allocate_ids(ToolCall, len(rows))
        for row, pk in zip(rows, ids, strict=True):
            row.id = pk
        ToolCall.objects.bulk_create(rows, batch_size=500)

    # A call stored unanswered earlier, answered by a message that arrived now.
    late = {cid: answered_by[cid] for cid, (_, result) in existing.items() if result is None and cid in answered_by}
    for cid, result_id in late.items():
        ToolCall.objects.filter(conversation=conversation, call_id=cid).update(result_message_id=result_id)

    # Tool results that answer no call at all are flagged, not rejected.
    all_ids = seen | {call.call_id for m in parsed.messages for call in m.tool_calls}
    orphan_ids = [
        nodes[m.key].id
        for m in parsed.messages
        if m.key in new_keys and m.tool_call_id and m.tool_call_id not in all_ids
    ]
    if orphan_ids:
        Message.objects.filter(id__in=orphan_ids).update(is_orphan_result=True)
    return len(rows), warnings


def _store_artifacts(conversation: Conversation, parsed: c.Conversation, created: bool) -> int:
    if not parsed.artifacts:
        return 0
    calls = dict(
        ToolCall.objects.filter(
            conversation=conversation, call_id__in={a.tool_call_id for a in parsed.artifacts}
        ).values_list("call_id", "id")
    )
    message_of_call = dict(ToolCall.objects.filter(id__in=calls.values()).values_list("id", "message_id"))
    existing: dict[tuple[str, str], tuple[int, bool]] = {}
    if not created:
        existing = {
            (call_id, artifact_id): (pk, resolved)
            for call_id, artifact_id, pk, resolved in InjectedArtifact.objects.filter(
                conversation=conversation
            ).values_list("tool_call__call_id", "artifact_id", "id", "resolved")
        }
    rows = []
    for artifact in parsed.artifacts:
        call_pk = calls.get(artifact.tool_call_id)
        if call_pk is None:
            continue
        found = existing.get((artifact.tool_call_id, artifact.artifact_id))
        if found:
            pk, was_resolved = found
            if artifact.resolved and not was_resolved:
                # The result arrived after the call was stored: record what it resolved to.
                InjectedArtifact.objects.filter(pk=pk).update(resolved=True, payload=artifact.payload)
            continue
        rows.append(
            InjectedArtifact(
                conversation=conversation,
                message_id=message_of_call[call_pk],
                tool_call_id=call_pk,
                kind=artifact.kind,
                artifact_id=artifact.artifact_id[:500],
                id_well_formed=artifact.id_well_formed,
                tool_name=artifact.tool_name[:255],
                requested=artifact.requested,
                resolved=artifact.resolved,
                payload=artifact.payload,
            )
        )
    InjectedArtifact.objects.bulk_create(rows, batch_size=500, ignore_conflicts=True)
    return len(rows)


def _store_imported_feedback(conversation: Conversation, parsed: c.Conversation, nodes: dict[str, _Node]) -> bool:
    """Feedback that came with the data (Masterbrain scores, ChatGPT thumbs): the producer's latest word wins."""
    if not parsed.feedback:
        return False
    stored = {
        (f.message_id, f.origin): f for f in Feedback.objects.filter(conversation=conversation, author__isnull=True)
    }
    changed = False
    now = timezone.now()
    for item in parsed.feedback:
        message_id = nodes[item.message_key].id if item.message_key and item.message_key in nodes else None
        if item.message_key and message_id is None:
            continue
        current = stored.get((message_id, item.origin))
        if current is None:
            stored[(message_id, item.origin)] = Feedback.objects.create(
                conversation=conversation,
                message_id=message_id,
                origin=item.origin,
                score=item.score,
                comment=item.comment or "",
                raw=item.raw,
                created_at=now,
                updated_at=now,
            )
            changed = True
        elif (current.score, current.comment, current.raw) != (item.score, item.comment or "", item.raw):
            current.score, current.comment, current.raw, current.updated_at = (
                item.score,
                item.comment or "",
                item.raw,
                now,
            )
            current.save(update_fields=["score", "comment", "raw", "updated_at"])
            changed = True
    return changed


def _is_leaf(nodes: dict[str, _Node], key: str) -> bool:
    node_id = nodes[key].id
    return not any(node.parent_id == node_id for node in nodes.values())


def _set_active_path(conversation: Conversation, nodes: dict[str, _Node], leaf_key: str) -> None:
    by_id = {node.id: node for node in nodes.values()}
    path: set[int] = set()
    node: _Node | None = nodes[leaf_key]
    while node is not None:
        path.add(node.id)
        node = by_id.get(node.parent_id) if node.parent_id else None
    Message.objects.filter(conversation=conversation, on_active_path=True).exclude(id__in=path).update(
        on_active_path=False
    )
    Message.objects.filter(conversation=conversation, id__in=path, on_active_path=False).update(on_active_path=True)
    conversation.active_leaf_key = leaf_key


def message_set_active_branch(*, conversation: Conversation, message: Message, actor: Actor = None) -> None:
    """Make the path through `message` (down to its newest leaf) the conversation's active path: what the thread
    shows first and what linear exports and training data take. A change is audited."""
    with transaction.atomic():
        # Locked, so that the audited "before" is the path this switch replaces.
        stored_leaf = (
            Conversation.objects.select_for_update().values_list("active_leaf_key", flat=True).get(pk=conversation.pk)
        )
        nodes = {
            key: _Node(pk, parent_id, depth, role, active)
            for key, pk, parent_id, depth, role, active in Message.objects.filter(
                conversation=conversation
            ).values_list("key", "id", "parent_id", "depth", "role", "on_active_path")
        }
        leaf_key = _newest_leaf_under(nodes, message.id)
        _set_active_path(conversation, nodes, leaf_key)
        conversation.save(update_fields=["active_leaf_key"])
        if leaf_key != stored_leaf:
            audit_record(
                actor=actor,
                action="conversation.branch_switched",
                target_type="conversation",
                target_id=conversation.uuid,
                conversation_uuid=conversation.uuid,
                before={"active_leaf_key": stored_leaf},
                after={"active_leaf_key": leaf_key, "message": message.key},
            )


def _newest_leaf_under(nodes: dict[str, _Node], node_id: int) -> str:
    children: dict[int | None, list[int]] = {}
    key_of = {}
    for key, node in nodes.items():
        children.setdefault(node.parent_id, []).append(node.id)
        key_of[node.id] = key
    current = node_id
    while children.get(current):
        current = max(children[current])  # ids grow with arrival: the newest child
    return key_of[current]


def _refresh_summary(
    conversation: Conversation,
    nodes: dict[str, _Node],
    parsed: c.Conversation,
    added: int,
    calls_added: int,
    artifacts_added: int,
    feedback_changed: bool,
) -> None:
    conversation.message_count = len(nodes)
    conversation.tool_call_count += calls_added
    conversation.artifact_count += artifacts_added
    parents = {node.parent_id for node in nodes.values()}
    leaves = sum(1 for node in nodes.values() if node.id not in parents)
    conversation.branch_count = max(leaves - 1, 0)
    if not conversation.first_user_text:
        first_user = next((m for m in parsed.messages if m.role == "user" and m.text.strip()), None)
        if first_user:
            conversation.first_user_text = " ".join(first_user.text.split())[:300]
    if feedback_changed:
        feedback_summary_refresh(conversation, save=False)


def feedback_summary_refresh(conversation: Conversation, *, save: bool = True) -> None:
    summary = Feedback.objects.filter(conversation=conversation).aggregate(
        total=Count("id"), up=Count("id", filter=Q(score=1)), down=Count("id", filter=Q(score=-1))
    )
    conversation.feedback_count = summary["total"]
    conversation.score_up = summary["up"]
    conversation.score_down = summary["down"]
    if save:
        conversation.save(update_fields=["feedback_count", "score_up", "score_down"])


def _refresh_search_vector(conversation: Conversation) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE chats_conversation SET search_vector = to_tsvector('english', left(
                coalesce(title, '') || ' ' || coalesce(
                    (SELECT string_agg(text, ' ' ORDER BY position) FROM chats_message WHERE conversation_id = %s), ''),
                %s))
            WHERE id = %s
            """,
            [conversation.pk, SEARCH_TEXT_LIMIT, conversation.pk],
        )


# --------------------------------------------------------------------------------------------------------------
# Feedback and review


class PermissionDenied(Exception):
    pass


class ValidationError(Exception):
    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{e['path']}: {e['message']}" for e in errors))


def _feedback_validate(
    *, message: Message | None, score: int | None, correction: str, labels: Iterable[Label], comment: str
) -> None:
    errors = []
    if score is not None and score not in (-1, 0, 1):
        errors.append({"path": "/score", "message": "must be -1, 0 or 1"})
    if correction and (message is None or message.role != "assistant"):
        errors.append({"path": "/correction", "message": "only an assistant message can be corrected"})
    if score is None and not comment.strip() and not correction.strip() and not list(labels):
        errors.append({"path": "", "message": "give a score, a label, a comment or a correction"})
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def feedback_submit(
    *,
    author: User,
    conversation: Conversation,
    message: Message | None = None,
    score: int | None = None,
    labels: Sequence[Label] = (),
    comment: str = "",
    correction: str = "",
) -> tuple[Feedback, bool]:
    """Create the reviewer's feedback on a conversation or a message, or change it if they already gave some."""
    _feedback_validate(message=message, score=score, correction=correction, labels=labels, comment=comment)
    mine = Feedback.objects.select_for_update().filter(conversation=conversation, message=message, author=author)
    existing = mine.first()
    if existing is None:
        now = timezone.now()
        try:
            with transaction.atomic():
                feedback = Feedback.objects.create(
                    conversation=conversation,
                    message=message,
                    origin=FeedbackOrigin.REVIEWER,
                    author=author,
                    score=score,
                    comment=comment,
                    correction=correction,
                    created_at=now,
                    updated_at=now,
                )
        except IntegrityError:
            # A second submission of the same reviewer raced this one: change theirs instead.
            existing = mine.get()
    if existing is not None:
        changed = feedback_update(
            actor=author, feedback=existing, score=score, labels=labels, comment=comment, correction=correction
        )
        return changed, False
    _feedback_set_labels(feedback, labels)
    feedback_summary_refresh(conversation)
    audit_record(
        actor=author,
        action="feedback.created",
        target_type="feedback",
        target_id=feedback.uuid,
        conversation_uuid=conversation.uuid,
        before=None,
        after=feedback.snapshot([label.name for label in labels]),
    )
    return feedback, True


def _feedback_set_labels(feedback: Feedback, labels: Sequence[Label]) -> None:
    FeedbackLabel.objects.filter(feedback=feedback).exclude(label__in=labels).delete()
    FeedbackLabel.objects.bulk_create(
        [FeedbackLabel(conversation_id=feedback.conversation_id, feedback=feedback, label=label) for label in labels],
        ignore_conflicts=True,
    )


def _ensure_owner(actor: User, feedback: Feedback) -> None:
    # Reviewers change only their own feedback; superusers (the admins) manage everything.
    if feedback.author_id != actor.pk and not actor.is_superuser:
        raise PermissionDenied("You can change only your own feedback.")


@transaction.atomic
def feedback_update(
    *,
    actor: User,
    feedback: Feedback,
    score: int | None,
    labels: Sequence[Label],
    comment: str,
    correction: str,
) -> Feedback:
    _ensure_owner(actor, feedback)
    _feedback_validate(message=feedback.message, score=score, correction=correction, labels=labels, comment=comment)
    before = feedback.snapshot()
    feedback.score, feedback.comment, feedback.correction = score, comment, correction
    feedback.updated_at = timezone.now()
    feedback.save(update_fields=["score", "comment", "correction", "updated_at"])
    _feedback_set_labels(feedback, labels)
    after = feedback.snapshot([label.name for label in labels])
    feedback_summary_refresh(feedback.conversation)
    if before != after:
        audit_record(
            actor=actor,
            action="feedback.updated",
            target_type="feedback",
            target_id=feedback.uuid,
            conversation_uuid=feedback.conversation.uuid,
            before=before,
            after=after,
        )
    return feedback


@transaction.atomic
def feedback_delete(*, actor: User, feedback: Feedback) -> None:
    _ensure_owner(actor, feedback)
    before = feedback.snapshot()
    conversation = feedback.conversation
    uuid = feedback.uuid
    feedback.delete()
    feedback_summary_refresh(conversation)
    audit_record(
        actor=actor,
        action="feedback.deleted",
        target_type="feedback",
        target_id=uuid,
        conversation_uuid=conversation.uuid,
        before=before,
        after=None,
    )


@transaction.atomic
def conversation_set_review_status(*, actor: User, conversation: Conversation, status: str) -> bool:
    if status not in ReviewStatus.values:
        raise ValidationError([{"path": "/status", "message": f"must be one of {', '.join(ReviewStatus.values)}"}])
    before = conversation.review_status
    if before == status:
        return False
    conversation.review_status = status
    conversation.save(update_fields=["review_status"])
    audit_record(
        actor=actor,
        action="conversation.status_changed",
        target_type="conversation",
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
        before={"review_status": before},
        after={"review_status": status},
    )
    return True


def export_record(
    *,
    actor: Actor,
    what: str,
    format: str,
    filters: dict[str, Any],
    count: int | None = None,
    conversation_uuid: Any = None,
) -> None:
    audit_record(
        actor=actor,
        action="conversation.exported",
        target_type=what,
        target_id=str(conversation_uuid or "filtered"),
        conversation_uuid=conversation_uuid,
        after={"format": format, "filters": filters, "count": count},
    )
