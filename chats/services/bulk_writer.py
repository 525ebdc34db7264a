"""The batch writer: many documents of one source carried out set-based, by COPY (the bulk endpoint's path).

Nothing here decides what a document means: every document is prepared by ``document_prepare``, placed
in its conversation by ``target_external_ids`` and planned by ``planner.plan_document`` against the
snapshot ``stored_snapshots`` reads, exactly as the row-by-row writer (``ingestion.conversation_store``)
does. This module only writes the plans of a batch at once, in ONE transaction:

1. the id-less documents' chats are locked (``idless_lock``), each document is placed in its
   conversation, and the batch's existing conversations are locked (``FOR NO KEY UPDATE``, in id order: batches
   that overlap do not deadlock) and read in five queries;
2. new conversations go in by COPY into a temporary table and one ``INSERT ... SELECT ... ON CONFLICT DO NOTHING
   RETURNING`` (marked stale for the search indexer); ids for messages and tool calls come from their sequences
   up front;
3. the new rows of every plan (messages, tool calls, artifacts, imported feedback, the ids an injection context
   lists, receipts) go in by one ``COPY`` per table, the receipts' payloads (each distinct one once) by one
   ``INSERT ... ON CONFLICT``, and the audit events by one ``INSERT``; the policy verdicts decided again for
   stored rows by a statement per verdict value for the whole batch (``plans_rewrite_verdicts``); other changes
   to rows that exist go through ``plan_apply_changes``. The row-by-row writer uses both too;
4. the queue rules are applied to the batch's created and changed conversations at once (``rules_apply``: a fixed
   number of queries per rule, whatever the batch's size).

Documents the batch cannot take are stored one by one after it commits, through the row-by-row writer: refused
documents (so that their receipts are exactly the ordinary ones), a second document for a conversation already
in the batch (it must be planned against what the first one stored), and a document that lost an ``ON CONFLICT``
race. If the batch transaction fails for any reason (one document the database refuses), it is rolled back (to its
savepoint, inside a worker's transaction) and every one of its documents takes the row-by-row writer, each in its
own savepoint, where a document that fails again is rejected alone with the reason: "atomic per conversation"
holds whatever happens, and a bad document costs only itself. The fallback runs only when the batch fails. Any
other database than PostgreSQL takes the row-by-row writer for everything.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection, transaction
from django.utils import timezone
from psycopg.rows import TupleRow

from chats.db.copy import copy_rows, ids_allocate
from chats.ingest import identity, planner, plans
from chats.models import (
    ApiKey,
    ContextArtifactId,
    Conversation,
    Feedback,
    IngestionReceipt,
    InjectedArtifact,
    Message,
    Source,
    ToolCall,
)
from chats.services.audit import audit_scope
from chats.services.audit_chain import audit_insert
from chats.services.documents import Prepared, document_prepare
from chats.services.ingestion import (
    IngestResult,
    conversation_store,
    conversations_changed,
    idless_lock,
    ingest_event,
    stored_snapshots,
    target_external_ids,
)
from chats.services.plan_writer import (
    ARTIFACT_COLUMNS,
    CALL_COLUMNS,
    CONTEXT_ID_COLUMNS,
    FEEDBACK_COLUMNS,
    MESSAGE_COLUMNS,
    Refs,
    new_conversation,
    plan_apply_changes,
    plan_rows,
    plans_rewrite_verdicts,
)
from chats.services.receipts import (
    Decision,
    Sender,
    receipt_payloads_save,
    receipt_values,
    receipts_complete,
    receipts_queued_again_on_error,
)

logger = logging.getLogger(__name__)

# Rows per INSERT statement of audit events.
_INSERT_CHUNK = 500


@dataclass
class _Item:
    index: int
    prepared: Prepared
    external_id: str = ""
    generated: bool = False
    plan: plans.Plan | None = None
    row: Conversation | None = None  # the stored conversation, when there is one
    conversation: Conversation | None = None


def conversations_ingest_bulk(
    *,
    source: Source,
    documents: Sequence[object],
    format: str | None = None,
    api_key: ApiKey | None = None,
    contents: Sequence[bytes | None] | None = None,
    queued: Sequence[IngestionReceipt] | None = None,
) -> list[IngestResult]:
    """Store many conversation documents of one source; one result per document, in order.

    The same outcomes, receipts and rows as ``ingestion.conversation_ingest`` for each document in turn.
    ``contents``: the bytes each document was decoded from (None where unknown), kept as its receipt's payload.
    ``queued``: the receipt each document was stored with before (an asynchronous bulk ingest, see
    ``chats.services.ingest_queue``), which its outcome completes instead of a new receipt.
    """
    # The writers record one event per conversation created or changed.
    with audit_scope(), cyclic_gc_paused():
        return _ingest(Sender(source, api_key), documents, format, contents, queued)


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a batch is parsed, planned and written.

    A batch allocates a few hundred thousand objects (decoded documents, parsed messages, planned rows) that live
    until it ends and form no cycles to collect; each collection walks all of them, again and again as they
    accumulate: about a fifth of the batch's CPU. Reference counting still frees what is dropped, and the batch
    is bounded by the body size and item limits, so memory grows with the batch as it does anyway; the collector
    runs again as soon as the batch ends. Re-entrant: an inner pause leaves the outer one's state alone.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _ingest(
    sender: Sender,
    documents: Sequence[object],
    format: str | None,
    contents: Sequence[bytes | None] | None,
    queued: Sequence[IngestionReceipt] | None,
) -> list[IngestResult]:
    source = sender.source
    items = [
        _Item(
            index,
            document_prepare(
                document=document,
                format=format,
                content=contents[index] if contents is not None else None,
                queued=queued[index] if queued is not None else None,
            ),
        )
        for index, document in enumerate(documents)
    ]
    if connection.vendor != "postgresql":
        return [conversation_store(sender=sender, prepared=item.prepared) for item in items]

    results: dict[int, IngestResult] = {}
    queued_receipts = [item.prepared.queued for item in items if item.prepared.queued is not None]
    try:
        with receipts_queued_again_on_error(queued_receipts), transaction.atomic():
            # Held to the commit: a concurrent document of one of these id-less chats waits, then finds it.
            idless_lock([item.prepared for item in items])
            batch, later = _split(source, items)
            if batch:
                results, lost = _write_batch(sender, batch)
                later.extend(lost)
    except Exception:
        # One document the database refuses (or any failure) costs the batch, never the request: the batch is
        # rolled back (to its savepoint, inside a worker's transaction), and each document is stored on its own,
        # in its own savepoint, where a failure rejects that document alone (see conversation_store).
        logger.exception("bulk ingest: the batch of %d documents failed; storing them one by one", len(items))
        results, later = {}, items
    for item in sorted(later, key=lambda later_item: later_item.index):
        results[item.index] = conversation_store(sender=sender, prepared=item.prepared)
    return [results[index] for index in range(len(documents))]


def _split(source: Source, items: list[_Item]) -> tuple[list[_Item], list[_Item]]:
    """(the batch, the documents for the row-by-row writer after it): refused documents, and any document whose
    conversation another document of the batch already takes (by id, or by content when it has no id)."""
    parsed = [item for item in items if item.prepared.parsed is not None]
    targets = target_external_ids(source, [item.prepared for item in parsed])
    for item, (external_id, generated) in zip(parsed, targets, strict=True):
        item.external_id, item.generated = external_id, generated
    conflicts = identity.batch_conflicts(
        [(item.prepared.parsed, item.external_id, item.generated) for item in parsed if item.prepared.parsed]
    )
    batch = [item for item, conflict in zip(parsed, conflicts, strict=True) if not conflict]
    later = [item for item in items if item.prepared.parsed is None]
    later += [item for item, conflict in zip(parsed, conflicts, strict=True) if conflict]
    return batch, later


def _write_batch(sender: Sender, batch: list[_Item]) -> tuple[dict[int, IngestResult], list[_Item]]:
    """Plan and write the batch; return the results and the documents that lost a race to create."""
    source = sender.source
    now = timezone.now()
    rows = {
        row.external_id: row
        for row in Conversation.objects.filter(
            source=source, external_id_digest__in=[Conversation.digest_of(item.external_id) for item in batch]
        )
        .select_for_update(no_key=True)
        .defer("title_vector")  # the planner never reads it
        .order_by("id")
    }
    snapshots = stored_snapshots(list(rows.values()))
    for item in batch:
        assert item.prepared.parsed is not None
        item.row = rows.get(item.external_id)
        item.plan = planner.plan_document(
            item.prepared.parsed,
            snapshots[item.row.pk] if item.row is not None else None,
            external_id=item.external_id,
            external_id_generated=item.generated,
            now=now,
        )

    new = sorted((item for item in batch if item.row is None), key=lambda item: item.external_id)
    with psycopg.Cursor(connection.connection) as cursor:
        created = _insert_conversations(cursor, source, new, now)
        lost = [item for item in new if item.external_id not in created]
        written = [item for item in batch if item.row is not None or item.external_id in created]
        for item in written:
            item.conversation = item.row if item.row is not None else created[item.external_id]
        _copy_plans(cursor, written, now)
        receipts = _copy_receipts(cursor, sender, written, now)

    results: dict[int, IngestResult] = {}
    events = []
    for item, receipt in zip(written, receipts, strict=True):
        plan, conversation, parsed = item.plan, item.conversation, item.prepared.parsed
        assert plan is not None and conversation is not None and parsed is not None
        results[item.index] = IngestResult(
            outcome=plan.outcome,
            format=parsed.format,
            external_id=plan.external_id,
            receipt=receipt,
            conversation=conversation,
            warnings=_warnings(item),
            messages_added=plan.messages_added,
        )
        if plan.change is not plans.Change.UNCHANGED:
            events.append(ingest_event(plan=plan, sender=sender, conversation=conversation, receipt=receipt))
    audit_insert(events)  # chained in this order, under one lock
    changed = [
        item.conversation.pk
        for item in written
        if item.conversation is not None and item.plan is not None and item.plan.change is not plans.Change.UNCHANGED
    ]
    conversations_changed(sender=sender, conversation_ids=changed)
    return results, lost


def _warnings(item: _Item) -> list[dict[str, str]]:
    assert item.prepared.parsed is not None and item.plan is not None
    return [w.as_dict() for w in item.prepared.parsed.warnings] + item.plan.warnings


_CONVERSATION_COLUMNS = (
    "uuid",
    "source_id",
    "external_id",
    "external_id_digest",
    "external_id_generated",
    "input_format",
    *plans.COMPARED_FIELDS,
    "active_leaf_key",
    "review_status",
    *plans.SUMMARY_FIELDS,
    "created_at",
    "updated_at",
    "last_activity_at",
)
_JSON_COLUMNS = frozenset(
    {"model_config", "scenario", "injection_context", "context_pairs", "metadata", "original_times"}
)
_NULLABLE_JSON = frozenset({"model_config", "scenario", "injection_context"})


def _insert_conversations(
    cursor: psycopg.Cursor[TupleRow], source: Source, new: list[_Item], now: datetime
) -> dict[str, Conversation]:
    """The conversations this batch created, by external id: COPY into a temporary table, then one
    INSERT ... SELECT ... ON CONFLICT DO NOTHING RETURNING (a conversation another request created first is
    left out, and its documents take the row-by-row writer)."""
    if not new:
        return {}
    columns = ", ".join(_CONVERSATION_COLUMNS)
    cursor.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS bulk_conversations AS SELECT {columns} FROM chats_conversation "
        "WITH NO DATA"
    )
    cursor.execute("TRUNCATE bulk_conversations")
    instances: dict[str, Conversation] = {}
    for item in new:
        assert item.plan is not None and item.prepared.parsed is not None
        conversation = new_conversation(source, item.prepared.parsed, item.plan, now)
        instances[item.external_id] = conversation
    rows = ([getattr(conversation, name) for name in _CONVERSATION_COLUMNS] for conversation in instances.values())
    copy_rows(cursor, "bulk_conversations", _CONVERSATION_COLUMNS, rows, _JSON_COLUMNS, _NULLABLE_JSON)
    cursor.execute(
        f"INSERT INTO chats_conversation ({columns}) SELECT {columns} FROM bulk_conversations "
        "ON CONFLICT (source_id, external_id_digest) DO NOTHING RETURNING id, external_id"
    )
    created: dict[str, Conversation] = {}
    for pk, external_id in cursor.fetchall():
        conversation = instances[external_id]
        conversation.pk = pk
        conversation._state.adding = False
        conversation._state.db = "default"
        created[external_id] = conversation
    return created


def _copy_plans(cursor: psycopg.Cursor[TupleRow], items: list[_Item], now: datetime) -> None:
    """COPY the new rows of every plan; change the rows that exist."""
    planned = [
        (item, item.plan) for item in items if item.plan is not None and item.plan.change is not plans.Change.UNCHANGED
    ]
    message_ids = iter(ids_allocate(cursor, Message._meta.db_table, sum(len(plan.messages) for _, plan in planned)))
    call_ids = iter(ids_allocate(cursor, ToolCall._meta.db_table, sum(len(plan.calls) for _, plan in planned)))
    messages: list[tuple[Any, ...]] = []
    calls: list[tuple[Any, ...]] = []
    artifacts: list[tuple[Any, ...]] = []
    feedback: list[tuple[Any, ...]] = []
    context_ids: list[tuple[Any, ...]] = []
    changes: list[tuple[plans.Plan, Conversation, Refs]] = []
    for item, plan in planned:
        assert item.conversation is not None
        refs = Refs([next(message_ids) for _ in plan.messages], [next(call_ids) for _ in plan.calls])
        rows = plan_rows(plan, item.conversation.pk, refs, now)
        messages += rows.messages
        calls += rows.calls
        artifacts += rows.artifacts
        feedback += rows.feedback
        context_ids += rows.context_ids
        if not plan.created:
            changes.append((plan, item.conversation, refs))
    # Before the listed ids go in: it removes those they replace.
    plans_rewrite_verdicts([(plan, item.conversation.pk) for item, plan in planned if item.conversation is not None])
    if messages:
        copy_rows(
            cursor,
            Message._meta.db_table,
            MESSAGE_COLUMNS,
            messages,
            frozenset({"aliases", "parts", "context_pairs", "author_metadata", "extra", "raw"}),
            frozenset({"raw"}),
        )
    if calls:
        copy_rows(
            cursor,
            ToolCall._meta.db_table,
            CALL_COLUMNS,
            calls,
            frozenset({"parsed_arguments", "extra"}),
            frozenset({"parsed_arguments"}),
        )
    if artifacts:
        copy_rows(
            cursor,
            InjectedArtifact._meta.db_table,
            ARTIFACT_COLUMNS,
            artifacts,
            frozenset({"payload"}),
            frozenset({"payload"}),
        )
    if feedback:
        copy_rows(
            cursor,
            Feedback._meta.db_table,
            FEEDBACK_COLUMNS,
            feedback,
            frozenset({"raw"}),
            frozenset({"raw"}),
        )
    if context_ids:
        copy_rows(cursor, ContextArtifactId._meta.db_table, CONTEXT_ID_COLUMNS, context_ids, frozenset())
    # After the new rows are in: the changes name rows this batch inserted (a late answer to a stored call).
    for plan, conversation, refs in changes:
        plan_apply_changes(plan, conversation, refs, now)


_RECEIPT_COLUMNS = (
    "id",
    "uuid",
    "source_id",
    "api_key_id",
    "conversation_id",
    "external_id",
    "input_format",
    "outcome",
    "payload_id",
    "payload_sha256",
    "size_bytes",
    "messages_added",
    "warnings",
    "errors",
    "created_at",
)


def _copy_receipts(
    cursor: psycopg.Cursor[TupleRow], sender: Sender, items: list[_Item], now: datetime
) -> list[IngestionReceipt]:
    """The batch's receipts by COPY, after their payloads (each distinct one once, in one statement); those stored
    queued before are completed instead."""
    receipt_payloads_save(item.prepared.content for item in items)
    new = [item for item in items if item.prepared.queued is None]
    ids = iter(ids_allocate(cursor, IngestionReceipt._meta.db_table, len(new)))
    instances: list[IngestionReceipt] = []
    rows: list[tuple[Any, ...]] = []
    completed: list[tuple[IngestionReceipt, dict[str, Any]]] = []
    for item in items:
        assert item.plan is not None and item.conversation is not None
        decision = Decision(
            outcome=item.plan.outcome,
            conversation_id=item.conversation.pk,
            external_id=item.plan.external_id,
            messages_added=item.plan.messages_added,
            warnings=_warnings(item),
        )
        values = receipt_values(sender, item.prepared, decision)
        if item.prepared.queued is not None:
            instances.append(item.prepared.queued)
            completed.append((item.prepared.queued, values))
            continue
        values |= {"id": next(ids), "uuid": uuid.uuid4(), "created_at": now}
        instances.append(
            IngestionReceipt.from_db("default", _RECEIPT_COLUMNS, [values[name] for name in _RECEIPT_COLUMNS])
        )
        values["payload_id"] = bytes.fromhex(values["payload_id"])  # as the column holds it (see Sha256Field)
        values["errors"] = []
        rows.append(tuple(values[name] for name in _RECEIPT_COLUMNS))
    if rows:
        copy_rows(cursor, IngestionReceipt._meta.db_table, _RECEIPT_COLUMNS, rows, frozenset({"warnings", "errors"}))
    receipts_complete(completed)
    return instances
