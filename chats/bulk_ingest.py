"""A set-based write path for many documents of one source at once: the bulk endpoint's fast path.

``services.conversation_store`` writes one conversation in about fifteen statements. For a batch this module:

1. parses every document (exactly as ``services.conversation_ingest`` does) and works out its external id;
2. in ONE transaction for the batch: finds with one query which ``(source, external_id)`` already exist (and
   locks them FOR SHARE); writes the NEW conversations set-based — one ``INSERT ... ON CONFLICT DO NOTHING
   RETURNING`` for the conversations (search vector included), ids for messages and tool calls taken from their
   sequences up front, then one ``COPY`` each for messages, tool calls, artifacts, imported feedback and
   receipts, and one ``INSERT`` for the audit events of the conversations created; and recognises, from four
   set-based reads, the documents that would change nothing in a conversation that exists (a replay), which then
   need only their receipt;
3. sends everything else through the ordinary path, one by one, after the batch has committed: documents of a
   conversation that exists and that would change it, documents that lost an ``ON CONFLICT`` race, a repeated
   external id within the batch, and documents that are rejected (so that their receipts and errors are exactly
   the ordinary ones);
4. if the batch transaction fails for any reason, rolls it back and stores every one of its documents through the
   ordinary path, so that "atomic per conversation" holds whatever happens.

The rows written are exactly those the ordinary path writes for the same input (``tests/bench/test_fast_path.py``
compares every column of every table). PostgreSQL only: on any other database every document takes the ordinary
path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection, transaction
from django.utils import timezone

from chats import ingest, services
from chats.ingest import canonical as c
from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    Feedback,
    IngestionReceipt,
    InjectedArtifact,
    Message,
    Outcome,
    ReviewStatus,
    Source,
    ToolCall,
)

logger = logging.getLogger(__name__)

# Rows per INSERT statement for conversations (29 parameters each, under PostgreSQL's 65,535).
_INSERT_CHUNK = 500

_json_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _jsonb(value: Any, *, nullable: bool) -> str | None:
    """The text a JSONField stores: SQL NULL for None in a nullable field, JSON null otherwise."""
    if value is None and nullable:
        return None
    return _json_encode(value)


@dataclass
class _Item:
    """One document of the batch, parsed."""

    index: int
    document: Any
    text: str  # canonical JSON of the document: hashed, and stored as the receipt's payload
    digest: str
    size_bytes: int
    parsed: c.Conversation | None = None  # None: the ordinary path decides (a rejection)
    ext_id: str = ""
    generated: bool = False


@dataclass
class _Plan:
    """What the ordinary path would write for a new conversation, with positions in place of database ids."""

    parents: list[int | None]  # per message: the position of its parent
    depths: list[int]
    sibling_indexes: list[int]
    on_path: list[bool]
    orphans: list[bool]
    active_leaf_key: str
    calls: list[tuple[int, str, c.ToolCall, int | None]]  # (message position, stored call id, call, answer position)
    artifacts: list[tuple[int, c.Artifact]]  # (call position among `calls`, artifact), duplicates removed
    artifact_count: int  # duplicates included, as the ordinary path counts them
    feedback: list[tuple[int | None, c.Feedback]]  # (message position or None, the producer's latest word)
    warnings: list[dict[str, str]] = field(default_factory=list)
    branch_count: int = 0
    first_user_text: str = ""


def conversations_ingest_bulk(
    *,
    source: Source,
    documents: Sequence[Any],
    format: str | None = None,
    api_key: ApiKey | None = None,
) -> list[services.IngestResult]:
    """Store many conversation documents of one source; one result per document, in order.

    Same outcomes, receipts and rows as calling ``services.conversation_ingest`` for each document in turn.
    """
    if connection.vendor != "postgresql":
        return [
            services.conversation_ingest(source=source, document=document, format=format, api_key=api_key)
            for document in documents
        ]
    items = [_prepare(index, document, format) for index, document in enumerate(documents)]
    batch: list[_Item] = []
    later: list[_Item] = []
    seen: set[str] = set()
    for item in items:
        if item.parsed is None or item.ext_id in seen:
            later.append(item)  # rejections and repeats of an external id: after the batch, in order
        else:
            seen.add(item.ext_id)
            batch.append(item)

    results: dict[int, services.IngestResult] = {}
    if batch:
        try:
            with transaction.atomic():
                results, deferred = _write_batch(source, api_key, batch)
        except Exception:
            logger.exception("bulk ingest: the batch of %d documents failed; storing them one by one", len(batch))
            results, deferred = {}, batch
        later.extend(deferred)

    for item in sorted(later, key=lambda later_item: later_item.index):
        results[item.index] = _ordinary(source, api_key, item, format)
    return [results[index] for index in range(len(documents))]


def _prepare(index: int, document: Any, format: str | None) -> _Item:
    text = c.canonical_json(document)
    encoded = text.encode()
    item = _Item(index, document, text, hashlib.sha256(encoded).hexdigest(), len(encoded))
    if "\\u0000" in text:
        return item  # refused by the ordinary path, with the NUL's JSON path
    try:
        parsed = ingest.parse_document(document, format=format)
        services._check_limits(parsed)
    except (c.ParseError, services.LimitExceeded):
        return item
    ext_id: Any = parsed.external_id
    if not ext_id:
        ext_id, item.generated = "gen-" + item.digest[:32], True
    item.parsed, item.ext_id = parsed, str(ext_id)[:255]
    return item


def _ordinary(source: Source, api_key: ApiKey | None, item: _Item, format: str | None) -> services.IngestResult:
    if item.parsed is None:
        return services.conversation_ingest(source=source, document=item.document, format=format, api_key=api_key)
    return services.conversation_store(
        source=source,
        parsed=item.parsed,
        document=item.document,
        digest=item.digest,
        size_bytes=item.size_bytes,
        api_key=api_key,
    )


# --------------------------------------------------------------------------------------------------------------
# The batch transaction


def _write_batch(
    source: Source, api_key: ApiKey | None, batch: list[_Item]
) -> tuple[dict[int, services.IngestResult], list[_Item]]:
    """Write what can be written set-based; return the results and the items left for the ordinary path."""
    now = timezone.now()
    existing = _existing(source, batch)
    deferred: list[_Item] = []
    receipts: list[tuple[_Item, str, int | None, list[dict[str, str]], int]] = []
    conversations: dict[int, Conversation] = {}

    # Conversations that exist: a replay that would change nothing needs only its receipt.
    old = [item for item in batch if item.ext_id in existing]
    if old:
        unchanged = _unchanged_items(old, existing)
        for item in old:
            row = existing[item.ext_id]
            assert item.parsed is not None
            if item.index not in unchanged:
                deferred.append(item)
                continue
            warnings = [w.as_dict() for w in item.parsed.warnings]
            if row["input_format"] != item.parsed.format:
                warnings.append(
                    {
                        "path": "",
                        "message": f"conversation was stored as {row['input_format']}; "
                        f"this document is {item.parsed.format}",
                    }
                )
            receipts.append((item, Outcome.UNCHANGED, row["id"], warnings, 0))
            conversations[item.index] = Conversation.from_db(
                "default", ["id", "uuid", "external_id"], [row["id"], row["uuid"], row["external_id"]]
            )

    # New conversations: planned in Python, written set-based.
    plans: dict[int, _Plan] = {}
    new: list[_Item] = []
    for item in batch:
        if item.ext_id in existing:
            continue
        assert item.parsed is not None
        plan = _plan(item.parsed)
        if plan is None:
            deferred.append(item)  # the ordinary path rejects it or fails on it, exactly as it would alone
        else:
            plans[item.index] = plan
            new.append(item)
    new.sort(key=lambda item: item.ext_id)  # one lock order for concurrent batches
    with psycopg.Cursor(connection.connection) as cursor:
        created = _insert_conversations(cursor, source, new, plans, now)
        for item in new:
            if item.ext_id not in created:
                deferred.append(item)  # another request created it first: the ordinary path updates it
        winners = [item for item in new if item.ext_id in created]
        _copy_conversation_rows(cursor, winners, plans, created, now)
        for item in winners:
            assert item.parsed is not None
            conversation = created[item.ext_id]
            conversations[item.index] = conversation
            warnings = [w.as_dict() for w in item.parsed.warnings] + plans[item.index].warnings
            receipts.append((item, Outcome.CREATED, conversation.pk, warnings, len(item.parsed.messages)))
        receipt_rows = _copy_receipts(cursor, source, api_key, receipts, now)

    results = {}
    events = []
    for (item, outcome, _, warnings, added), receipt in zip(receipts, receipt_rows, strict=True):
        assert item.parsed is not None
        results[item.index] = services.IngestResult(
            outcome=outcome,
            format=item.parsed.format,
            external_id=item.ext_id,
            receipt=receipt,
            conversation=conversations[item.index],
            warnings=warnings,
            messages_added=added,
        )
        if outcome == Outcome.CREATED:
            # The same event the ordinary path writes for a conversation it creates; a replay writes none.
            events.append(
                services._ingest_event(
                    actor=None,
                    source=source,
                    api_key=api_key,
                    conversation=conversations[item.index],
                    receipt=receipt,
                    added=added,
                    before=None,
                )
            )
    AuditEvent.objects.bulk_create(events, batch_size=_INSERT_CHUNK)
    return results, deferred


# Conversation fields a later document may change (services._store compares them; input_format stays).
_COMPARED_FIELDS = (
    "title",
    "user_external_id",
    "model_name",
    "model_config",
    "started_at",
    "ended_at",
    "scenario",
    "injection_context",
    "context_pairs",
    "metadata",
)


def _existing(source: Source, batch: list[_Item]) -> dict[str, dict[str, Any]]:
    """The batch's conversations that exist, locked against concurrent writers (in id order: no deadlock between
    batches that overlap)."""
    rows = (
        Conversation.objects.filter(source=source, external_id__in=[item.ext_id for item in batch])
        .select_for_update(no_key=True)
        .order_by("id")
        .values("id", "uuid", "external_id", "input_format", "active_leaf_key", *_COMPARED_FIELDS)
    )
    return {row["external_id"]: row for row in rows}


def _unchanged_items(old: list[_Item], existing: dict[str, dict[str, Any]]) -> set[int]:
    """The items (by index) for which the ordinary path would write nothing but a receipt saying "unchanged"."""
    ids = {existing[item.ext_id]["id"] for item in old}
    keys: dict[int, dict[str, int]] = {pk: {} for pk in ids}
    for conversation_id, key, pk in Message.objects.filter(conversation_id__in=ids).values_list(
        "conversation_id", "key", "id"
    ):
        keys[conversation_id][key] = pk
    candidates = [
        item
        for item in old
        if item.parsed is not None and all(m.key in keys[existing[item.ext_id]["id"]] for m in item.parsed.messages)
    ]
    if not candidates:
        return set()
    ids = {existing[item.ext_id]["id"] for item in candidates}
    calls: dict[int, dict[str, int | None]] = {pk: {} for pk in ids}
    for conversation_id, call_id, result_id in ToolCall.objects.filter(conversation_id__in=ids).values_list(
        "conversation_id", "call_id", "result_message_id"
    ):
        calls[conversation_id][call_id] = result_id
    artifacts: dict[int, dict[tuple[str, str], bool]] = {pk: {} for pk in ids}
    for conversation_id, call_id, artifact_id, resolved in InjectedArtifact.objects.filter(
        conversation_id__in=ids
    ).values_list("conversation_id", "tool_call__call_id", "artifact_id", "resolved"):
        artifacts[conversation_id][(call_id, artifact_id)] = resolved
    feedback: dict[int, dict[tuple[int | None, str], tuple[Any, ...]]] = {pk: {} for pk in ids}
    for conversation_id, message_id, origin, score, comment, raw in Feedback.objects.filter(
        conversation_id__in=ids, author__isnull=True
    ).values_list("conversation_id", "message_id", "origin", "score", "comment", "raw"):
        feedback[conversation_id][(message_id, origin)] = (score, comment, raw)

    unchanged = set()
    for item in candidates:
        row = existing[item.ext_id]
        pk = row["id"]
        assert item.parsed is not None
        if _would_change(item.parsed, row, keys[pk], calls[pk], artifacts[pk], feedback[pk]):
            continue
        unchanged.add(item.index)
    return unchanged


def _would_change(
    parsed: c.Conversation,
    row: dict[str, Any],
    keys: dict[str, int],
    calls: dict[str, int | None],
    artifacts: dict[tuple[str, str], bool],
    feedback: dict[tuple[int | None, str], tuple[Any, ...]],
) -> bool:
    """Whether services._store would write anything for a document whose messages are all stored already.

    Mirrors its decisions one by one; any doubt answers True, and the ordinary path then decides.
    """
    # The active path moves only to a leaf the document names (no message was added).
    if parsed.active_leaf_key and parsed.active_leaf_key in keys and parsed.active_leaf_key != row["active_leaf_key"]:
        return True
    fields = services._conversation_fields(parsed)
    for name in _COMPARED_FIELDS:
        value = fields[name]
        if value not in (None, "", [], {}) and row[name] != value:
            return True
    # A call stored unanswered, answered by a message of this document.
    answering = {m.tool_call_id for m in parsed.messages if m.tool_call_id}
    if any(result is None and call_id in answering for call_id, result in calls.items()):
        return True
    for artifact in parsed.artifacts:
        if artifact.tool_call_id not in calls:
            continue
        resolved = artifacts.get((artifact.tool_call_id, artifact.artifact_id))
        if resolved is None or (artifact.resolved and not resolved):
            return True
    for item in parsed.feedback:
        message_id = keys.get(item.message_key) if item.message_key else None
        if item.message_key and message_id is None:
            continue
        if feedback.get((message_id, item.origin)) != (item.score, item.comment or "", item.raw):
            return True
    return False


def _plan(parsed: c.Conversation) -> _Plan | None:
    """The rows services._store writes for a new conversation; None when it would reject or fail on it."""
    messages = parsed.messages
    position: dict[str, int] = {}
    stored_keys: set[str] = set()
    parents: list[int | None] = []
    depths: list[int] = []
    sibling_indexes: list[int] = []
    children: dict[int | None, int] = {}
    for index, message in enumerate(messages):
        if message.key in position or message.key[:255] in stored_keys:
            return None  # two messages with one key: the ordinary path fails on the unique constraint
        parent = None
        if message.parent_key:
            parent = position.get(message.parent_key)
            if parent is None:
                return None  # the ordinary path rejects it: "parent ... is not in the conversation"
        count = children.get(parent, 0)
        children[parent] = count + 1
        parents.append(parent)
        depths.append(depths[parent] + 1 if parent is not None else 0)
        sibling_indexes.append(count)
        position[message.key] = index
        stored_keys.add(message.key[:255])

    on_path = [False] * len(messages)
    active_leaf_key = ""
    leaf_key = parsed.active_leaf_key or (messages[-1].key if messages else None)
    if leaf_key and leaf_key in position and (messages or parsed.active_leaf_key):
        node: int | None = position[leaf_key]
        while node is not None:
            on_path[node] = True
            node = parents[node]
        active_leaf_key = leaf_key

    answered_by: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.tool_call_id and message.tool_call_id not in answered_by:
            answered_by[message.tool_call_id] = index
    warnings: list[dict[str, str]] = []
    calls: list[tuple[int, str, c.ToolCall, int | None]] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        for call in message.tool_calls:
            call_id = call.call_id[:255]
            if call_id in seen:
                call_id = f"{call.call_id}@{message.key}"[:255]
                if call_id in seen:
                    return None  # the ordinary path fails on the unique constraint
                warnings.append(
                    {
                        "path": message.source_path,
                        "message": f"tool call id {call.call_id!r} repeats an earlier call; stored as {call_id!r}",
                    }
                )
            seen.add(call_id)
            calls.append((index, call_id, call, answered_by.get(call.call_id)))
    all_ids = seen | {call.call_id for m in messages for call in m.tool_calls}
    orphans = [bool(m.tool_call_id) and m.tool_call_id not in all_ids for m in messages]

    call_position = {call_id: k for k, (_, call_id, _, _) in enumerate(calls)}
    artifacts: list[tuple[int, c.Artifact]] = []
    artifact_keys: set[tuple[int, str]] = set()
    artifact_count = 0
    for artifact in parsed.artifacts:
        k = call_position.get(artifact.tool_call_id)
        if k is None:
            continue
        if not (artifact.requested or artifact.resolved):
            return None  # the ordinary path fails on the check constraint
        artifact_count += 1  # counted even when a duplicate is dropped, as the ordinary path counts
        if (k, artifact.artifact_id[:500]) not in artifact_keys:
            artifact_keys.add((k, artifact.artifact_id[:500]))
            artifacts.append((k, artifact))

    feedback: dict[tuple[int | None, str], c.Feedback] = {}
    for item in parsed.feedback:
        target = position.get(item.message_key) if item.message_key else None
        if item.message_key and target is None:
            continue
        feedback[(target, item.origin)] = item  # first one's place, the latest one's values

    non_leaves = set(parents)
    leaves = sum(1 for index in range(len(messages)) if index not in non_leaves)
    first_user = next((m for m in messages if m.role == "user" and m.text.strip()), None)
    return _Plan(
        parents=parents,
        depths=depths,
        sibling_indexes=sibling_indexes,
        on_path=on_path,
        orphans=orphans,
        active_leaf_key=active_leaf_key,
        calls=calls,
        artifacts=artifacts,
        artifact_count=artifact_count,
        feedback=[(target, item) for (target, _), item in feedback.items()],
        warnings=warnings,
        branch_count=max(leaves - 1, 0),
        first_user_text=" ".join(first_user.text.split())[:300] if first_user else "",
    )


_CONVERSATION_COLUMNS = (
    "uuid",
    "source_id",
    "external_id",
    "external_id_generated",
    "input_format",
    *_COMPARED_FIELDS,
    "active_leaf_key",
    "review_status",
    "message_count",
    "tool_call_count",
    "artifact_count",
    "branch_count",
    "feedback_count",
    "score_up",
    "score_down",
    "first_user_text",
    "created_at",
    "updated_at",
    "last_activity_at",
)
_JSON_COLUMNS = {"model_config", "scenario", "injection_context", "context_pairs", "metadata"}
_NULLABLE_JSON = {"model_config", "scenario", "injection_context"}


def _insert_conversations(
    cursor: psycopg.Cursor[Any], source: Source, new: list[_Item], plans: dict[int, _Plan], now: datetime
) -> dict[str, Conversation]:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING: the conversations this batch created, by external id."""
    values_sql = (
        "("
        + ", ".join("%s::jsonb" if name in _JSON_COLUMNS else "%s" for name in _CONVERSATION_COLUMNS)
        + ", to_tsvector('english', %s))"
    )
    columns = ", ".join((*_CONVERSATION_COLUMNS, "search_vector"))
    created: dict[str, Conversation] = {}
    for start in range(0, len(new), _INSERT_CHUNK):
        chunk = new[start : start + _INSERT_CHUNK]
        params: list[Any] = []
        python_rows: dict[str, dict[str, Any]] = {}
        for item in chunk:
            parsed = item.parsed
            assert parsed is not None
            plan = plans[item.index]
            summary = _feedback_summary(plan)
            row: dict[str, Any] = {
                "uuid": uuid.uuid4(),
                "source_id": source.pk,
                "external_id": item.ext_id,
                "external_id_generated": item.generated,
                **services._conversation_fields(parsed),
                "active_leaf_key": plan.active_leaf_key,
                "review_status": ReviewStatus.UNREVIEWED.value,
                "message_count": len(parsed.messages),
                "tool_call_count": len(plan.calls),
                "artifact_count": plan.artifact_count,
                "branch_count": plan.branch_count,
                "feedback_count": summary[0],
                "score_up": summary[1],
                "score_down": summary[2],
                "first_user_text": plan.first_user_text,
                "created_at": now,
                "updated_at": now,
                "last_activity_at": parsed.started_at or now,
            }
            python_rows[item.ext_id] = row
            for name in _CONVERSATION_COLUMNS:
                value = row[name]
                params.append(_jsonb(value, nullable=name in _NULLABLE_JSON) if name in _JSON_COLUMNS else value)
            # services._refresh_search_vector's text, built here rather than read back from the messages.
            search_text = row["title"] + " " + " ".join(m.text for m in parsed.messages)
            params.append(search_text[: services.SEARCH_TEXT_LIMIT] if parsed.messages else None)
        cursor.execute(
            f"INSERT INTO chats_conversation ({columns}) VALUES {', '.join([values_sql] * len(chunk))} "
            "ON CONFLICT (source_id, external_id) DO NOTHING RETURNING id, external_id",
            params,
        )
        for pk, external_id in cursor.fetchall():
            row = python_rows[external_id]
            names = ["id", *_CONVERSATION_COLUMNS]
            created[external_id] = Conversation.from_db(
                "default", names, [pk, *(row[name] for name in _CONVERSATION_COLUMNS)]
            )
    return created


def _feedback_summary(plan: _Plan) -> tuple[int, int, int]:
    scores = [item.score for _, item in plan.feedback]
    return len(scores), scores.count(1), scores.count(-1)


def _allocate(cursor: psycopg.Cursor[Any], table: str, count: int) -> Iterator[int]:
    """Primary keys reserved from the table's sequence, ascending (as services._allocate_ids)."""
    if count == 0:
        return iter(())
    cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count])
    return iter(sorted(row[0] for row in cursor.fetchall()))


_MESSAGE_COLUMNS = (
    "id, conversation_id, key, parent_id, position, depth, sibling_index, on_active_path, role, name, section, "
    "content_form, parts, text, reasoning, context_pairs, author_metadata, sent_at, tool_call_id, "
    "is_orphan_result, hidden, recipient, extra, raw, source_path, created_at"
)
_CALL_COLUMNS = (
    "id, conversation_id, message_id, call_id, index, type, name, arguments, parsed_arguments, arguments_error, "
    "result_message_id, extra"
)
_ARTIFACT_COLUMNS = (
    "conversation_id, message_id, tool_call_id, kind, artifact_id, id_well_formed, tool_name, requested, resolved, "
    "payload"
)
_FEEDBACK_COLUMNS = "uuid, conversation_id, message_id, origin, score, comment, correction, raw, created_at, updated_at"


def _copy(cursor: psycopg.Cursor[Any], table: str, columns: str, rows: Iterable[Sequence[Any]]) -> None:
    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _copy_conversation_rows(
    cursor: psycopg.Cursor[Any],
    winners: list[_Item],
    plans: dict[int, _Plan],
    created: dict[str, Conversation],
    now: datetime,
) -> None:
    """COPY the messages, tool calls, artifacts and imported feedback of the conversations just created."""
    message_ids = _allocate(cursor, "chats_message", sum(len(item.parsed.messages) for item in winners if item.parsed))
    call_ids = _allocate(cursor, "chats_toolcall", sum(len(plans[item.index].calls) for item in winners))
    messages: list[tuple[Any, ...]] = []
    calls: list[tuple[Any, ...]] = []
    artifacts: list[tuple[Any, ...]] = []
    feedback: list[tuple[Any, ...]] = []
    for item in winners:
        parsed = item.parsed
        assert parsed is not None
        plan = plans[item.index]
        conversation_id = created[item.ext_id].pk
        ids = [next(message_ids) for _ in parsed.messages]
        for index, message in enumerate(parsed.messages):
            parent = plan.parents[index]
            messages.append(
                (
                    ids[index],
                    conversation_id,
                    message.key[:255],
                    ids[parent] if parent is not None else None,
                    index,
                    plan.depths[index],
                    plan.sibling_indexes[index],
                    plan.on_path[index],
                    message.role[:64],
                    (message.name or "")[:255],
                    message.section,
                    services._content_form(message),
                    _json_encode(message.parts),
                    message.text,
                    message.reasoning,
                    _json_encode(message.context_pairs),
                    _json_encode(message.author_metadata),
                    message.created_at,
                    (message.tool_call_id or "")[:255],
                    plan.orphans[index],
                    message.hidden,
                    (message.recipient or "")[:255],
                    _json_encode(message.extra),
                    _jsonb(message.raw, nullable=True),
                    message.source_path[:255],
                    now,
                )
            )
        call_pks: list[int] = []
        for message_index, call_id, call, answer in plan.calls:
            pk = next(call_ids)
            call_pks.append(pk)
            calls.append(
                (
                    pk,
                    conversation_id,
                    ids[message_index],
                    call_id,
                    call.index,
                    call.type[:32],
                    call.name[:255],
                    call.arguments,
                    _jsonb(call.parsed_arguments, nullable=True),
                    call.arguments_error,
                    ids[answer] if answer is not None else None,
                    _json_encode(call.extra),
                )
            )
        for k, artifact in plan.artifacts:
            artifacts.append(
                (
                    conversation_id,
                    ids[plan.calls[k][0]],
                    call_pks[k],
                    artifact.kind,
                    artifact.artifact_id[:500],
                    artifact.id_well_formed,
                    artifact.tool_name[:255],
                    artifact.requested,
                    artifact.resolved,
                    _jsonb(artifact.payload, nullable=True),
                )
            )
        for target, entry in plan.feedback:
            feedback.append(
                (
                    uuid.uuid4(),
                    conversation_id,
                    ids[target] if target is not None else None,
                    entry.origin,
                    entry.score,
                    entry.comment or "",
                    "",
                    _jsonb(entry.raw, nullable=True),
                    now,
                    now,
                )
            )
    _copy(cursor, Message._meta.db_table, _MESSAGE_COLUMNS, messages)
    if calls:
        _copy(cursor, ToolCall._meta.db_table, _CALL_COLUMNS, calls)
    if artifacts:
        _copy(cursor, InjectedArtifact._meta.db_table, _ARTIFACT_COLUMNS, artifacts)
    if feedback:
        _copy(cursor, Feedback._meta.db_table, _FEEDBACK_COLUMNS, feedback)


_RECEIPT_FIELDS = (
    "id",
    "uuid",
    "source_id",
    "api_key_id",
    "conversation_id",
    "external_id",
    "input_format",
    "outcome",
    "payload",
    "payload_text",
    "payload_sha256",
    "size_bytes",
    "messages_added",
    "warnings",
    "errors",
    "created_at",
)


def _copy_receipts(
    cursor: psycopg.Cursor[Any],
    source: Source,
    api_key: ApiKey | None,
    receipts: list[tuple[_Item, str, int | None, list[dict[str, str]], int]],
    now: datetime,
) -> list[IngestionReceipt]:
    ids = _allocate(cursor, IngestionReceipt._meta.db_table, len(receipts))
    instances: list[IngestionReceipt] = []
    rows: list[tuple[Any, ...]] = []
    for item, outcome, conversation_id, warnings, added in receipts:
        assert item.parsed is not None
        values = [
            next(ids),
            uuid.uuid4(),
            source.pk,
            api_key.pk if api_key else None,
            conversation_id,
            item.ext_id,
            item.parsed.format,
            outcome,
            item.document,
            "",
            item.digest,
            item.size_bytes,
            added,
            warnings,
            [],
            now,
        ]
        instances.append(IngestionReceipt.from_db("default", _RECEIPT_FIELDS, values))
        # The canonical text is the document's JSON already: jsonb stores the same value.
        values[8], values[13], values[14] = item.text, _json_encode(warnings), "[]"
        rows.append(tuple(values))
    if rows:
        _copy(cursor, IngestionReceipt._meta.db_table, ", ".join(_RECEIPT_FIELDS), rows)
    return instances
