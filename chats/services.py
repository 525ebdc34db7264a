"""Every write with side effects: ingestion, feedback, review status, sources, keys, labels, and the audit trail.

Views, serializers, forms, commands and the admin translate input and output and call these functions; nothing
else writes conversations, feedback or audit events.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import uuid as uuid_module
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, router, transaction
from django.db.models import Count, Exists, Model, OuterRef, Q
from django.db.models.deletion import Collector
from django.utils import timezone

from chats import ingest
from chats.ingest import canonical as c
from chats.ingest import planner
from chats.ingest.chatgpt_export import apply_message_feedback
from chats.models import (
    SEARCH_DOCUMENT_SQL,
    SEARCH_TEXT_LIMIT,
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
#
# Every path (the single endpoint, the bulk endpoint's JSON and NDJSON, the import command, the demo data) goes:
# document_prepare (decode-level checks, parse, limits) -> which conversation -> a snapshot of what is stored ->
# planner.plan_document (the one place that decides) -> a writer. conversation_store is the row-by-row writer;
# chats.bulk_ingest carries a batch of plans out by COPY. Both write the rows from the same row builders below.


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
    return hashlib.sha256(c.canonical_json(document).encode(errors="surrogatepass")).hexdigest()


@dataclass
class Prepared:
    """One document, checked and parsed: what every ingestion path plans from."""

    document: Any
    text: str  # canonical JSON of the document: hashed, and the receipt's payload
    digest: str
    size_bytes: int
    format: str  # the parsed format, else the one the client named ("" when none)
    parsed: c.Conversation | None = None  # None: refused, for `errors`
    errors: list[c.Issue] = field(default_factory=list)
    over_limit: bool = False
    payload_text: str = ""  # the document as text, when it cannot be stored as JSON
    external_id: str | None = None  # the document's own id, else the client's


def document_prepare(
    *,
    document: Any,
    format: str | None = None,
    external_id: str | None = None,
    size_bytes: int | None = None,
    message_feedback: list[dict[str, Any]] | None = None,
) -> Prepared:
    """Check and parse one document (no database work): what cannot be stored is refused here, with its path."""
    text = c.canonical_json(document)
    try:
        encoded = text.encode()
        has_surrogate = False
    except UnicodeEncodeError:
        # json.loads accepts an unpaired surrogate escape ("\ud800"); no UTF-8 text can hold one.
        encoded = text.encode(errors="surrogatepass")
        has_surrogate = True
    prepared = Prepared(
        document=document,
        text=text,
        digest=hashlib.sha256(encoded).hexdigest(),
        size_bytes=size_bytes if size_bytes is not None else len(encoded),
        format=format or "",
        external_id=external_id or None,
    )
    unstorable = _find_unstorable(document) if has_surrogate or "\\u0000" in text else None
    if unstorable is not None:
        # PostgreSQL stores neither in text or JSON; refuse rather than alter what was sent.
        prepared.errors = [c.Issue(*unstorable)]
        prepared.payload_text = encoded.decode(errors="backslashreplace")
        return prepared
    try:
        parsed = ingest.parse_document(document, format=format)
        _check_limits(parsed)
    except c.ParseError as error:
        prepared.errors = error.errors
        return prepared
    except LimitExceeded as error:
        prepared.errors, prepared.over_limit = [error.issue], True
        return prepared
    if message_feedback:
        # A ChatGPT export's message_feedback.json: thumbs on the messages it names.
        parsed.warnings.extend(apply_message_feedback([parsed], message_feedback))
    planner.assign_content_keys(parsed)
    prepared.parsed, prepared.format = parsed, parsed.format
    prepared.external_id = parsed.external_id or prepared.external_id
    return prepared


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
    prepared = document_prepare(
        document=document,
        format=format,
        external_id=external_id,
        size_bytes=size_bytes,
        message_feedback=message_feedback,
    )
    return conversation_store(source=source, prepared=prepared, api_key=api_key, actor=actor)


def conversation_store(
    *, source: Source, prepared: Prepared, api_key: ApiKey | None = None, actor: Actor = None
) -> IngestResult:
    """Store a prepared document row by row (see conversation_ingest): the planner decides, this writes."""
    if prepared.parsed is None:
        return _reject(source, api_key, prepared, prepared.errors)
    parsed = prepared.parsed
    try:
        with transaction.atomic():
            plan, conversation = _plan_and_write(source, prepared)
            warnings = [w.as_dict() for w in parsed.warnings] + plan.warnings
            receipt = _receipt(
                source,
                api_key,
                prepared,
                outcome=plan.outcome,
                warnings=warnings,
                conversation=conversation,
                added=plan.messages_added,
                external_id=plan.external_id,
            )
            if plan.outcome != Outcome.UNCHANGED:
                ingest_event(
                    plan=plan, actor=actor, source=source, api_key=api_key, conversation=conversation, receipt=receipt
                ).save(force_insert=True)
    except c.ParseError as error:
        return _reject(source, api_key, prepared, error.errors)
    except IntegrityError:
        # What the planner checks, a constraint refused (a digest collision crafted into one document's ids, or a
        # race lost twice): the document is refused whole, and can be sent again.
        return _reject(
            source, api_key, prepared, [c.Issue("", "the document conflicts with what is stored; nothing was stored")]
        )
    return IngestResult(
        outcome=plan.outcome,
        format=parsed.format,
        external_id=plan.external_id,
        receipt=receipt,
        conversation=conversation,
        warnings=warnings,
        messages_added=plan.messages_added,
    )


def _plan_and_write(source: Source, prepared: Prepared) -> tuple[planner.Plan, Conversation]:
    parsed = prepared.parsed
    assert parsed is not None
    idless_lock([prepared])
    external_id, generated = target_external_ids(source, [prepared])[0]
    digest = Conversation.digest_of(external_id)
    now = timezone.now()
    for attempt in (1, 2):
        row = (
            Conversation.objects.select_for_update()
            .filter(source=source, external_id_digest=digest)
            .defer("search_vector")  # the planner never reads it, and it is the row's largest column
            .first()
        )
        stored = stored_snapshots([row])[row.pk] if row is not None else None
        plan = planner.plan_document(parsed, stored, external_id=external_id, external_id_generated=generated)
        try:
            with transaction.atomic():
                return plan, _write_plan(source, parsed, plan, row, now)
        except IntegrityError:
            # Another request created the conversation first: plan again against what it stored.
            if row is not None or attempt == 2:
                raise
    raise AssertionError("unreachable")


def idless_lock(prepared: Sequence[Prepared]) -> None:
    """Serialise, until the transaction ends, documents without an id that may belong to one chat (they share their
    first message): the first to commit is found by the next, so that two versions of one growing history sent at
    once make one conversation, not two. PostgreSQL only (SQLite serialises writers anyway)."""
    if connection.vendor != "postgresql":
        return
    keys = sorted(
        {
            int.from_bytes(p.parsed.messages[0].content_key.bytes[:8], "big", signed=True)
            for p in prepared
            if not p.external_id and p.parsed is not None and p.parsed.messages[0].content_key is not None
        }
    )
    if keys:
        with connection.cursor() as cursor:
            # In one order, so that two batches never wait for each other's locks.
            cursor.execute(
                "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT k FROM unnest(%s::bigint[]) AS k ORDER BY k) AS s",
                [keys],
            )


def target_external_ids(source: Source, prepared: Sequence[Prepared]) -> list[tuple[str, bool]]:
    """Which conversation each document belongs to, as (external id, whether the server made it up).

    An explicit id names it. A document without one is matched by its content against the source's id-less
    conversations (design notes §3, rule 2): one query for all the documents.
    """
    idless = [p.parsed for p in prepared if not p.external_id and p.parsed is not None]
    found: dict[uuid_module.UUID, planner.IdlessMatch] = {}
    if idless:
        keys = {m.content_key for parsed in idless for m in parsed.messages}
        has_children = Message.objects.filter(conversation_id=OuterRef("conversation_id"), parent_id=OuterRef("pk"))
        rows = (
            Message.objects.filter(
                content_key__in=keys, conversation__source=source, conversation__external_id_generated=True
            )
            .annotate(has_children=Exists(has_children))
            .order_by("conversation_id")
            .values_list("content_key", "conversation_id", "conversation__external_id", "has_children")
        )
        for key, conversation_id, external_id, children in rows:
            match = planner.IdlessMatch(conversation_id, external_id, not children)
            if key is not None and (key not in found or (match.is_leaf and not found[key].is_leaf)):
                found[key] = match
    targets = []
    for p in prepared:
        if p.external_id:
            targets.append((p.external_id, False))
            continue
        assert p.parsed is not None
        target = planner.idless_target(p.parsed, found)
        targets.append((target.external_id if target else planner.generated_external_id(p.parsed), True))
    return targets


def stored_snapshots(rows: Sequence[Conversation]) -> dict[int, planner.Stored]:
    """What the planner needs of stored conversations, in five queries however many there are."""
    snapshots = {
        row.pk: planner.Stored(
            pk=row.pk,
            external_id=row.external_id,
            input_format=row.input_format,
            active_leaf_key=row.active_leaf_key,
            fields={name: getattr(row, name) for name in planner.COMPARED_FIELDS},
            summary={name: getattr(row, name) for name in planner.SUMMARY_FIELDS},
        )
        for row in rows
    }
    if not snapshots:
        return snapshots
    pks = list(snapshots)
    for row in Message.objects.filter(conversation_id__in=pks).values_list(
        "conversation_id", "id", "key", "parent_id", "depth", "position", "role", "content_key", "aliases",
        "on_active_path",
    ):  # fmt: skip
        snapshots[row[0]].messages.append(planner.StoredMessage(*row[1:]))
    calls = ToolCall.objects.filter(conversation_id__in=pks)
    for conversation_id, pk, call_id, message_id, result_id in calls.values_list(
        "conversation_id", "id", "call_id", "message_id", "result_message_id"
    ):
        snapshots[conversation_id].calls.append(planner.StoredCall(pk, call_id, message_id, result_id))
    artifacts = InjectedArtifact.objects.filter(conversation_id__in=pks)
    for conversation_id, pk, call_id, artifact_id, resolved in artifacts.values_list(
        "conversation_id", "id", "tool_call__call_id", "artifact_id", "resolved"
    ):
        snapshots[conversation_id].artifacts.append(planner.StoredArtifact(pk, call_id, artifact_id, resolved))
    imported = Feedback.objects.filter(conversation_id__in=pks, author__isnull=True)
    for conversation_id, pk, message_id, origin, score, comment, raw in imported.values_list(
        "conversation_id", "id", "message_id", "origin", "score", "comment", "raw"
    ):
        snapshots[conversation_id].feedback.append(planner.StoredFeedback(pk, message_id, origin, score, comment, raw))
    return snapshots


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
    """Per-conversation limits, checked on the parsed document before any database work."""
    counts = (
        (len(parsed.messages), settings.MASTERBRAIN_MAX_MESSAGES, "messages"),
        (sum(len(m.tool_calls) for m in parsed.messages), settings.MASTERBRAIN_MAX_TOOL_CALLS, "tool calls"),
        (len(parsed.artifacts), settings.MASTERBRAIN_MAX_ARTIFACTS, "injected artifacts"),
    )
    for count, limit, what in counts:
        if count > limit:
            raise LimitExceeded(c.Issue("", f"{count} {what}: at most {limit} per conversation."))


def _reject(source: Source, api_key: ApiKey | None, prepared: Prepared, errors: Sequence[c.Issue]) -> IngestResult:
    error_dicts = [e.as_dict() for e in errors]
    receipt = _receipt(source, api_key, prepared, outcome=Outcome.REJECTED, errors=error_dicts)
    return IngestResult(
        outcome=Outcome.REJECTED,
        format=prepared.format,
        external_id=prepared.external_id or "",
        receipt=receipt,
        errors=error_dicts,
        over_limit=prepared.over_limit,
    )


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
    prepared: Prepared,
    *,
    outcome: str,
    warnings: list[dict[str, str]] | None = None,
    errors: list[dict[str, str]] | None = None,
    conversation: Conversation | None = None,
    added: int = 0,
    external_id: str | None = None,
) -> IngestionReceipt:
    values = receipt_values(
        source, api_key, prepared, outcome, warnings, errors, conversation.pk if conversation else None, added
    )
    if external_id is not None:
        values["external_id"] = external_id
    return IngestionReceipt.objects.create(**values)


def receipt_values(
    source: Source,
    api_key: ApiKey | None,
    prepared: Prepared,
    outcome: str,
    warnings: list[dict[str, str]] | None,
    errors: list[dict[str, str]] | None,
    conversation_id: int | None,
    added: int,
) -> dict[str, Any]:
    """The columns of a document's receipt (both writers)."""
    return {
        "source_id": source.pk,
        "api_key_id": api_key.pk if api_key else None,
        "conversation_id": conversation_id,
        "external_id": prepared.external_id or "",
        # A format the client named that is not one: kept as far as the column holds (the errors say which).
        "input_format": prepared.format[:20],
        "outcome": outcome,
        "payload": None if prepared.payload_text else prepared.document,
        "payload_text": prepared.payload_text,
        "payload_sha256": prepared.digest,
        "size_bytes": prepared.size_bytes,
        "messages_added": added,
        "warnings": warnings or [],
        "errors": errors or [],
    }


def ingest_event(
    *,
    plan: planner.Plan,
    actor: Actor,
    source: Source,
    api_key: ApiKey | None,
    conversation: Conversation,
    receipt: IngestionReceipt,
) -> AuditEvent:
    """The one audit event of a document that created or changed a conversation (unsaved: the bulk path inserts
    many at once): its state and the fields the document changed, before and after."""
    after = planner.audited_state(plan.summary, conversation.active_leaf_key)
    before = _jsonable(plan.before) if plan.before is not None else None
    if before is None:
        action = "conversation.created"
        after |= {"external_id": conversation.external_id, "format": conversation.input_format}
    else:
        after |= {name: _jsonable(value) for name, value in plan.fields.items()}
        if after["branch_count"] > before["branch_count"]:
            action = "conversation.branched"
        elif plan.messages_added:
            action = "conversation.appended"
        else:
            action = "conversation.updated"
    if plan.feedback_withdrawn:
        after["feedback_withdrawn"] = [
            {"origin": f.origin, "score": f.score, "comment": f.comment} for f in plan.feedback_withdrawn
        ]
    after |= {
        "messages_added": plan.messages_added,
        "receipt": str(receipt.uuid),
        "api_key": api_key.prefix if api_key else None,
    }
    return _audit_event(
        actor=actor if actor is not None else SourceActor(source),
        action=action,
        target_type="conversation",
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
        before=before,
        after=after,
    )


# --- the rows of a plan, for both writers ---------------------------------------------------------------------

MESSAGE_COLUMNS = (
    "id", "conversation_id", "key", "content_key", "aliases", "parent_id", "position", "depth", "sibling_index",
    "on_active_path", "role", "name", "section", "content_form", "parts", "text", "reasoning", "context_pairs",
    "author_metadata", "sent_at", "tool_call_id", "is_orphan_result", "hidden", "recipient", "extra", "raw",
    "source_path", "created_at",
)  # fmt: skip
CALL_COLUMNS = (
    "id", "conversation_id", "message_id", "call_id", "index", "type", "name", "arguments", "parsed_arguments",
    "arguments_error", "result_message_id", "extra",
)  # fmt: skip
ARTIFACT_COLUMNS = (
    "conversation_id", "message_id", "tool_call_id", "kind", "artifact_id", "id_well_formed", "tool_name",
    "requested", "resolved", "payload",
)  # fmt: skip
FEEDBACK_COLUMNS = (
    "uuid", "conversation_id", "message_id", "origin", "score", "comment", "correction", "raw", "created_at",
    "updated_at",
)  # fmt: skip


class Refs:
    """Primary keys for a plan's refs: stored rows keep theirs, new ones take the ids reserved for them."""

    def __init__(self, message_ids: Sequence[int], call_ids: Sequence[int]) -> None:
        self.message_ids = message_ids
        self.call_ids = call_ids

    def message(self, ref: int | None) -> int | None:
        if ref is None:
            return None
        return self.message_ids[planner.new_index(ref)] if ref < 0 else ref

    def call(self, ref: int) -> int:
        return self.call_ids[planner.new_index(ref)] if ref < 0 else ref


def _content_form(message: c.Message) -> str:
    if message.content_is_null:
        return ContentForm.NULL
    return ContentForm.STRING if message.content_is_string else ContentForm.PARTS


def plan_rows(
    plan: planner.Plan, conversation_id: int, refs: Refs, now: datetime
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The new rows of a plan (messages, tool calls, artifacts, feedback), as values in *_COLUMNS order."""
    messages = [
        (
            refs.message_ids[index],
            conversation_id,
            row.key,
            row.content_key,
            row.aliases,
            refs.message(row.parent),
            row.position,
            row.depth,
            row.sibling_index,
            row.on_active_path,
            row.role,
            row.name,
            row.message.section,
            _content_form(row.message),
            row.message.parts,
            row.message.text,
            row.message.reasoning,
            row.message.context_pairs,
            row.message.author_metadata,
            row.message.created_at,
            row.message.tool_call_id,
            row.is_orphan_result,
            row.message.hidden,
            row.recipient,
            row.message.extra,
            row.message.raw,
            row.message.source_path,
            now,
        )
        for index, row in enumerate(plan.messages)
    ]
    calls = [
        (
            refs.call_ids[index],
            conversation_id,
            refs.message(row.message),
            row.call_id,
            row.call.index,
            row.type,
            row.name,
            row.call.arguments,
            row.call.parsed_arguments,
            row.call.arguments_error,
            refs.message(row.result),
            row.call.extra,
        )
        for index, row in enumerate(plan.calls)
    ]
    artifacts = [
        (
            conversation_id,
            refs.message(row.message),
            refs.call(row.call),
            row.artifact.kind,
            row.artifact.artifact_id,
            row.artifact.id_well_formed,
            row.tool_name,
            row.artifact.requested,
            row.artifact.resolved,
            row.artifact.payload,
        )
        for row in plan.artifacts
    ]
    feedback = [
        (
            uuid_module.uuid4(),
            conversation_id,
            refs.message(row.message),
            row.feedback.origin,
            row.feedback.score,
            row.feedback.comment or "",
            "",
            row.feedback.raw,
            now,
            now,
        )
        for row in plan.feedback
    ]
    return messages, calls, artifacts, feedback


def new_conversation(source: Source, parsed: c.Conversation, plan: planner.Plan, now: datetime) -> Conversation:
    """The unsaved row of a conversation a plan creates."""
    return Conversation(
        source=source,
        external_id=plan.external_id,
        external_id_digest=Conversation.digest_of(plan.external_id),
        external_id_generated=plan.external_id_generated,
        input_format=parsed.format,
        active_leaf_key=plan.active_leaf_key or "",
        created_at=now,
        updated_at=now,
        last_activity_at=parsed.started_at or now,
        search_stale=True,  # its search vector is built apart (search_index)
        **plan.fields,
        **plan.summary,
    )


def plan_apply_changes(plan: planner.Plan, conversation: Conversation, refs: Refs, now: datetime) -> None:
    """Carry out what a plan changes in rows that exist (both writers: such changes are few)."""
    for pk, aliases in plan.aliases.items():
        Message.objects.filter(pk=pk).update(aliases=aliases)
    for pk, ref in plan.call_results.items():
        ToolCall.objects.filter(pk=pk).update(result_message_id=refs.message(ref))
    for pk, payload in plan.resolved_artifacts.items():
        InjectedArtifact.objects.filter(pk=pk).update(resolved=True, payload=payload)
    for pk, item in plan.feedback_updates:
        Feedback.objects.filter(pk=pk).update(
            score=item.score, comment=item.comment or "", raw=item.raw, updated_at=now
        )
    if plan.feedback_withdrawn:
        Feedback.objects.filter(pk__in=[f.pk for f in plan.feedback_withdrawn]).delete()
    if plan.path_off:
        Message.objects.filter(pk__in=plan.path_off).update(on_active_path=False)
    if plan.path_on:
        Message.objects.filter(pk__in=plan.path_on).update(on_active_path=True)
    if plan.created or plan.outcome == Outcome.UNCHANGED:
        return
    for name, value in (plan.fields | plan.summary).items():
        setattr(conversation, name, value)
    if plan.active_leaf_key is not None:
        conversation.active_leaf_key = plan.active_leaf_key
    conversation.updated_at = now
    # New text, or a new title: its search vector is built again, apart (search_index).
    conversation.search_stale = conversation.search_stale or bool(plan.messages) or "title" in plan.fields
    conversation.save(update_fields=[*plan.fields, *plan.summary, "active_leaf_key", "updated_at", "search_stale"])


def _write_plan(
    source: Source, parsed: c.Conversation, plan: planner.Plan, row: Conversation | None, now: datetime
) -> Conversation:
    """The row-by-row writer: one conversation's plan through the ORM (any database)."""
    if plan.created:
        conversation = new_conversation(source, parsed, plan, now)
        conversation.save(force_insert=True)
    else:
        assert row is not None
        conversation = row
    if plan.outcome == Outcome.UNCHANGED:
        return conversation
    refs = Refs(_allocate_ids(Message, len(plan.messages)), _allocate_ids(ToolCall, len(plan.calls)))
    messages, calls, artifacts, feedback = plan_rows(plan, conversation.pk, refs, now)
    Message.objects.bulk_create([Message(**dict(zip(MESSAGE_COLUMNS, values, strict=True))) for values in messages])
    ToolCall.objects.bulk_create([ToolCall(**dict(zip(CALL_COLUMNS, values, strict=True))) for values in calls])
    InjectedArtifact.objects.bulk_create(
        [InjectedArtifact(**dict(zip(ARTIFACT_COLUMNS, values, strict=True))) for values in artifacts]
    )
    Feedback.objects.bulk_create([Feedback(**dict(zip(FEEDBACK_COLUMNS, values, strict=True))) for values in feedback])
    plan_apply_changes(plan, conversation, refs, now)
    return conversation


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
            return sorted(row[0] for row in cursor.fetchall())
        # SQLite serialises writers, so the next ids are ours until this transaction ends.
        cursor.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{table}"')
        start = cursor.fetchone()[0] + 1
        return list(range(start, start + count))


@dataclass
class _Node:
    id: int
    parent_id: int | None
    depth: int
    role: str
    on_active_path: bool


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


def feedback_summary_refresh(conversation: Conversation, *, save: bool = True) -> None:
    summary = Feedback.objects.filter(conversation=conversation).aggregate(
        total=Count("id"), up=Count("id", filter=Q(score=1)), down=Count("id", filter=Q(score=-1))
    )
    conversation.feedback_count = summary["total"]
    conversation.score_up = summary["up"]
    conversation.score_down = summary["down"]
    if save:
        conversation.save(update_fields=["feedback_count", "score_up", "score_down"])


# --------------------------------------------------------------------------------------------------------------
# Search index


def search_index(*, limit: int = 500) -> int:
    """Build the search vectors of up to `limit` stale conversations (those ingestion marked); how many it built.

    Ingestion leaves this apart, as a search engine's indexer does: a vector costs as much as the rest of the
    ingestion together. Rows an ingestion holds are skipped (SKIP LOCKED) and stay stale for the next round, so
    several indexers may run at once. On SQLite, which searches message text, it only clears the marks.
    """
    if connection.vendor != "postgresql":
        with transaction.atomic():
            ids = list(Conversation.objects.filter(search_stale=True).values_list("id", flat=True)[:limit])
            return Conversation.objects.filter(id__in=ids).update(search_stale=False)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH batch AS (
                SELECT id FROM chats_conversation WHERE search_stale ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
            )
            UPDATE chats_conversation c SET search_vector = {SEARCH_DOCUMENT_SQL}, search_stale = false
            FROM batch WHERE c.id = batch.id
            """,
            [limit, SEARCH_TEXT_LIMIT],
        )
        return cursor.rowcount


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
