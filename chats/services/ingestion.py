"""Ingestion: a document in, a conversation stored whole or not at all, idempotently, with a receipt either way.

Every path (the single endpoint, the bulk endpoint's JSON and NDJSON, the import command, the demo data) goes:
`document_prepare` (decode-level checks, parse, limits) -> which conversation (`target_external_ids`) -> a snapshot
of what is stored (`stored_snapshots`) -> `planner.plan_document` (the one place that decides) -> a writer.
`conversation_store` carries one plan out row by row (`plan_writer.write_plan`); `bulk_writer` carries a batch of
plans out by COPY. Both write the rows from the same row builders (`plan_writer`), and both then apply the queue
rules (`queue_rules.rules_apply`) to the conversations they created or changed, in the same transaction.

A document that fails while it is written (a value the database refuses, a trigger, any error that sending it
again would not heal) is rejected alone by `conversation_store`, in its own savepoint, with the reason
(`failure_issue`); only a transient database error (`chats.transient.TRANSIENT_ERRORS`) is raised, for the caller to retry.
"""

from __future__ import annotations

import logging
import uuid as uuid_module
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.formats import canonical as c
from chats.ingest import identity, planner, plans
from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    Feedback,
    IngestionReceipt,
    InjectedArtifact,
    Message,
    Outcome,
    Source,
    ToolCall,
)
from chats.services.audit import Actor, SourceActor, audit_event, audited_write, jsonable
from chats.services.audit_chain import audit_insert
from chats.services.documents import Prepared, document_prepare
from chats.services.plan_writer import write_plan
from chats.services.queue_rules import rules_apply
from chats.services.receipts import (
    Decision,
    Sender,
    receipt_create,
    receipt_reject_raw,
    receipts_queued_again_on_error,
)
from chats.services.trend_rollups import trends_rollup_soon
from chats.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)


@dataclass
class IngestResult:
    outcome: Outcome
    format: str
    external_id: str
    receipt: IngestionReceipt
    conversation: Conversation | None = None
    warnings: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    messages_added: int = 0
    over_limit: bool = False
    decoded: bool = True  # False: an NDJSON line that is not JSON (`line_reject`), so no document at all


def conversation_ingest(
    *,
    source: Source,
    document: object,
    format: str | None = None,
    external_id: str | None = None,
    api_key: ApiKey | None = None,
    content: bytes | None = None,
    message_feedback: list[dict[str, Any]] | None = None,
    actor: Actor = None,
) -> IngestResult:
    """Store one conversation document: whole or not at all, idempotently, and leave a receipt either way.

    `actor` is who sends it when that is not the source itself by its key (a command importing files). `content`
    is the bytes the document was decoded from, kept as its receipt's payload (see `document_prepare`).
    """
    prepared = document_prepare(
        document=document,
        format=format,
        external_id=external_id,
        content=content,
        message_feedback=message_feedback,
    )
    return conversation_store(sender=Sender(source, api_key, actor), prepared=prepared)


@audited_write
def conversation_store(*, sender: Sender, prepared: Prepared) -> IngestResult:
    """Store a prepared document row by row (see conversation_ingest): the planner decides, this writes."""
    if prepared.parsed is None:
        return reject(sender, prepared, prepared.errors)
    parsed = prepared.parsed
    queued = [prepared.queued] if prepared.queued is not None else []
    try:
        with receipts_queued_again_on_error(queued), transaction.atomic():
            plan, conversation = _plan_and_write(sender.source, prepared)
            warnings = [w.as_dict() for w in parsed.warnings] + plan.warnings
            receipt = receipt_create(
                sender,
                prepared,
                Decision(
                    outcome=plan.outcome,
                    conversation_id=conversation.pk,
                    external_id=plan.external_id,
                    messages_added=plan.messages_added,
                    warnings=warnings,
                ),
            )
            if plan.outcome != Outcome.UNCHANGED:
                audit_insert([ingest_event(plan=plan, sender=sender, conversation=conversation, receipt=receipt)])
                conversations_changed(sender=sender, conversation_ids=[conversation.pk])
    except c.ParseError as error:
        return reject(sender, prepared, error.errors)
    except TRANSIENT_ERRORS:
        raise  # the database, not the document: the caller tries again (a worker's task retries)
    except Exception as error:
        if not isinstance(error, IntegrityError):
            logger.exception("ingest: storing one document failed; it is rejected")
        return reject(sender, prepared, [rejection_issue(error)])
    return IngestResult(
        outcome=plan.outcome,
        format=parsed.format,
        external_id=plan.external_id,
        receipt=receipt,
        conversation=conversation,
        warnings=warnings,
        messages_added=plan.messages_added,
    )


_REASON_CHARS = 300

CONFLICT = c.Issue("", "the document conflicts with what is stored; nothing was stored")


def rejection_issue(error: BaseException) -> c.Issue:
    """Why a document whose writing failed is rejected (the writers' one rule). A constraint refused what the
    planner checks (a digest collision crafted into one document's ids, or a race lost twice): it conflicts with
    what is stored, and can be sent again. Any other failure is the document's own, which sending it again would not
    heal (PostgreSQL refused one of its values, or a trigger did): its receipt says why (`failure_issue`), and the
    bytes stay in its payload. Transient errors are never a document's (see `chats.transient`)."""
    return CONFLICT if isinstance(error, IntegrityError) else failure_issue(error)


def failure_issue(error: BaseException) -> c.Issue:
    """Why one document could not be stored, for its receipt: the kind of error and PostgreSQL's primary message
    (never its detail or context, which quote other rows), as storable text."""
    cause = error.__cause__ if isinstance(error, DatabaseError) and error.__cause__ is not None else error
    diag = getattr(cause, "diag", None)
    message = getattr(diag, "message_primary", None) or str(cause).split("\n", 1)[0]
    shown = message.replace("\x00", "\\u0000").encode(errors="backslashreplace").decode()[:_REASON_CHARS]
    what = "the database refused the document" if isinstance(error, DatabaseError) else "storing the document failed"
    return c.Issue("", f"{what} ({type(error).__name__}: {shown}); nothing of it was stored")


def reject(sender: Sender, prepared: Prepared, errors: Sequence[c.Issue]) -> IngestResult:
    """Refuse a document whole: only its receipt is stored, with the errors."""
    error_dicts = [e.as_dict() for e in errors]
    receipt = receipt_create(sender, prepared, Decision(outcome=Outcome.REJECTED, errors=error_dicts))
    return IngestResult(
        outcome=Outcome.REJECTED,
        format=prepared.format,
        external_id=prepared.external_id or "",
        receipt=receipt,
        errors=error_dicts,
        over_limit=prepared.over_limit,
    )


def line_reject(*, sender: Sender, line: bytes, error: c.Issue) -> IngestResult:
    """An NDJSON line that is not JSON: no document, so no id or format, but a rejected outcome and a receipt that
    keeps the line's bytes, as every refused document has."""
    receipt = receipt_reject_raw(source=sender.source, api_key=sender.api_key, body=line, errors=[error])
    return IngestResult(
        outcome=Outcome.REJECTED, format="", external_id="", receipt=receipt, errors=[error.as_dict()], decoded=False
    )


def _plan_and_write(source: Source, prepared: Prepared) -> tuple[plans.Plan, Conversation]:
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
            .defer("title_vector")  # the planner never reads it
            .first()
        )
        stored = stored_snapshots([row])[row.pk] if row is not None else None
        plan = planner.plan_document(parsed, stored, external_id=external_id, external_id_generated=generated, now=now)
        try:
            with transaction.atomic():
                return plan, write_plan(source, parsed, plan, row, now)
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
    found: dict[uuid_module.UUID, identity.IdlessMatch] = {}
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
        found = identity.idless_matches(
            (key, identity.IdlessMatch(conversation_id, external_id, not children))
            for key, conversation_id, external_id, children in rows
        )
    targets = []
    for p in prepared:
        if p.external_id:
            targets.append((p.external_id, False))
            continue
        assert p.parsed is not None
        targets.append((identity.document_target(p.parsed, found), True))
    return targets


def stored_snapshots(rows: Sequence[Conversation]) -> dict[int, plans.Stored]:
    """What the planner needs of stored conversations, in five queries however many there are."""
    snapshots = {
        row.pk: plans.Stored(
            pk=row.pk,
            external_id=row.external_id,
            input_format=row.input_format,
            active_leaf_key=row.active_leaf_key,
            fields={name: getattr(row, name) for name in plans.COMPARED_FIELDS},
            summary={name: getattr(row, name) for name in plans.SUMMARY_FIELDS},
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
        snapshots[row[0]].messages.append(plans.StoredMessage(*row[1:]))
    calls = ToolCall.objects.filter(conversation_id__in=pks)
    for conversation_id, pk, call_id, message_id, result_id in calls.values_list(
        "conversation_id", "id", "call_id", "message_id", "result_message_id"
    ):
        snapshots[conversation_id].calls.append(plans.StoredCall(pk, call_id, message_id, result_id))
    artifacts = InjectedArtifact.objects.filter(conversation_id__in=pks)
    for conversation_id, pk, call_id, artifact_id, resolved, kind, requested, verdict in artifacts.values_list(
        "conversation_id", "id", "tool_call__call_id", "artifact_id", "resolved", "kind", "requested", "verdict"
    ):
        snapshots[conversation_id].artifacts.append(
            plans.StoredArtifact(pk, call_id, artifact_id, resolved, kind, requested, verdict)
        )
    imported = Feedback.objects.filter(conversation_id__in=pks, author__isnull=True)
    for conversation_id, pk, message_id, origin, score, comment, raw in imported.values_list(
        "conversation_id", "id", "message_id", "origin", "score", "comment", "raw"
    ):
        snapshots[conversation_id].feedback.append(plans.StoredFeedback(pk, message_id, origin, score, comment, raw))
    return snapshots


def conversations_changed(*, sender: Sender, conversation_ids: Sequence[int]) -> None:
    """What follows an ingestion that created or changed these conversations, in its transaction (both writers call
    this): the queue rules take those that match, and the Trends rollups of their days are rebuilt once it commits.
    Their search vectors are already built, by the statements that wrote their messages (chats.search_schema)."""
    rules_apply(actor=sender_actor(sender), conversation_ids=conversation_ids)
    if conversation_ids:
        trends_rollup_soon(conversation_ids)


def sender_actor(sender: Sender) -> Actor:
    """Who an ingestion's writes are recorded as: whoever sends for the source (a command), else the source."""
    return sender.actor if sender.actor is not None else SourceActor(sender.source)


# The audit action of each change a plan makes (an unchanged conversation records none).
_INGEST_ACTIONS = {
    plans.Change.CREATED: AuditAction.CONVERSATION_CREATED,
    plans.Change.BRANCHED: AuditAction.CONVERSATION_BRANCHED,
    plans.Change.APPENDED: AuditAction.CONVERSATION_APPENDED,
    plans.Change.UPDATED: AuditAction.CONVERSATION_UPDATED,
}


def ingest_event(
    *, plan: plans.Plan, sender: Sender, conversation: Conversation, receipt: IngestionReceipt
) -> AuditEvent:
    """The one audit event of a document that created or changed a conversation (unsaved: the bulk path inserts
    many at once): its state and the fields the document changed, before and after."""
    after = planner.audited_state(plan.summary, conversation.active_leaf_key)
    before = jsonable(plan.before) if plan.before is not None else None
    # Whether it is a policy violation: said when it is first judged, and whenever an ingestion changes it.
    violation = plan.summary["policy_violation"]
    action = _INGEST_ACTIONS[plan.change]
    if before is None:
        after |= {"external_id": conversation.external_id, "format": conversation.input_format}
        if violation is not None:
            after["policy_violation"] = violation
    else:
        after |= {name: jsonable(value) for name, value in plan.fields.items()}
        if "policy_violation" in before:
            after["policy_violation"] = violation
    if plan.feedback_withdrawn:
        after["feedback_withdrawn"] = [
            {"origin": f.origin, "score": f.score, "comment": f.comment} for f in plan.feedback_withdrawn
        ]
    after |= {
        "messages_added": plan.messages_added,
        "receipt": str(receipt.uuid),
        "api_key": sender.api_key.prefix if sender.api_key else None,
    }
    return audit_event(
        actor=sender_actor(sender),
        action=action,
        target_type="conversation",
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
        before=before,
        after=after,
    )
