"""A plan's rows: what both writers insert and change, built once.

`plan_rows` turns a plan into the values of its new rows (messages, tool calls, artifacts, imported feedback, the
ids its injection context lists) in the *_COLUMNS order; `new_conversation` is the unsaved row of a conversation a
plan creates; `plan_apply_changes` carries out what a plan changes in rows that exist, and `plans_rewrite_verdicts`
the policy verdicts that plans decided again, for many plans at once. `write_plan` is the row-by-row writer,
through the ORM (any database); `chats.services.bulk_writer` writes the same rows of a batch by COPY.
"""

from __future__ import annotations

import uuid as uuid_module
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from chats.formats import canonical as c
from chats.ingest import plans
from chats.models import (
    ContentForm,
    ContextArtifactId,
    Conversation,
    Feedback,
    InjectedArtifact,
    Message,
    Source,
    ToolCall,
)

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
    "requested", "resolved", "payload", "verdict",
)  # fmt: skip
FEEDBACK_COLUMNS = (
    "uuid", "conversation_id", "message_id", "origin", "score", "comment", "correction", "raw", "created_at",
    "updated_at",
)  # fmt: skip
CONTEXT_ID_COLUMNS = ("conversation_id", "kind", "artifact_id", "id_well_formed", "state")


class Refs:
    """Primary keys for a plan's refs: stored rows keep theirs, new ones take the ids reserved for them."""

    def __init__(self, message_ids: Sequence[int], call_ids: Sequence[int]) -> None:
        self.message_ids = message_ids
        self.call_ids = call_ids

    def message(self, ref: int | None) -> int | None:
        if ref is None:
            return None
        return self.message_ids[plans.new_index(ref)] if ref < 0 else ref

    def call(self, ref: int) -> int:
        return self.call_ids[plans.new_index(ref)] if ref < 0 else ref


def _content_form(message: c.Message) -> str:
    if message.content_is_null:
        return ContentForm.NULL
    return ContentForm.STRING if message.content_is_string else ContentForm.PARTS


@dataclass(frozen=True)
class PlanRows:
    """The new rows of a plan, each a tuple of values in its table's *_COLUMNS order."""

    messages: list[tuple[Any, ...]]
    calls: list[tuple[Any, ...]]
    artifacts: list[tuple[Any, ...]]
    feedback: list[tuple[Any, ...]]
    context_ids: list[tuple[Any, ...]]  # when the plan replaces the listed ids (see plans_rewrite_verdicts)


def plan_rows(plan: plans.Plan, conversation_id: int, refs: Refs, now: datetime) -> PlanRows:
    """The new rows of a plan (messages, tool calls, artifacts, feedback, listed ids)."""
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
            row.raw,
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
            row.verdict,
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
    context_ids = [
        (conversation_id, item.kind, item.artifact_id, item.id_well_formed, item.state)
        for item in plan.context_ids or []
    ]
    return PlanRows(messages, calls, artifacts, feedback, context_ids)


def new_conversation(source: Source, parsed: c.Conversation, plan: plans.Plan, now: datetime) -> Conversation:
    """The unsaved row of a conversation a plan creates, with the values the planner gave it (`plan.creation`)."""
    creation = plan.creation
    assert creation is not None, "a plan that creates its conversation"
    return Conversation(
        uuid=creation.uuid,
        source=source,
        external_id=plan.external_id,
        external_id_digest=Conversation.digest_of(plan.external_id),
        external_id_generated=plan.external_id_generated,
        input_format=parsed.format,
        active_leaf_key=plan.active_leaf_key or "",
        created_at=now,
        updated_at=now,
        last_activity_at=creation.last_activity_at,
        review_status=creation.review_status,
        **plan.fields,
        **plan.summary,
    )


def plan_apply_changes(plan: plans.Plan, conversation: Conversation, refs: Refs, now: datetime) -> None:
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
    if plan.created or plan.change is plans.Change.UNCHANGED:
        return
    for name, value in (plan.fields | plan.summary).items():
        setattr(conversation, name, value)
    if plan.active_leaf_key is not None:
        conversation.active_leaf_key = plan.active_leaf_key
    conversation.updated_at = now
    conversation.save(update_fields=[*plan.fields, *plan.summary, "active_leaf_key", "updated_at"])


def plans_rewrite_verdicts(changes: Sequence[tuple[plans.Plan, int]]) -> None:
    """For (plan, conversation id) pairs: set the verdicts the plans decided again on stored artifacts, and remove
    the listed ids of the stored conversations whose plans replace them (their new rows go in with the others).

    A statement per verdict value and one delete, however many plans and rows: a batch's context changes cost
    what one does.
    """
    by_verdict: dict[str | None, list[int]] = defaultdict(list)
    for plan, _ in changes:
        for pk, verdict in plan.verdicts.items():
            by_verdict[verdict].append(pk)
    for verdict, pks in by_verdict.items():
        InjectedArtifact.objects.filter(pk__in=pks).update(verdict=verdict)
    replaced = [pk for plan, pk in changes if plan.context_ids is not None and not plan.created]
    if replaced:
        ContextArtifactId.objects.filter(conversation_id__in=replaced).delete()


def write_plan(
    source: Source, parsed: c.Conversation, plan: plans.Plan, row: Conversation | None, now: datetime
) -> Conversation:
    """The row-by-row writer: one conversation's plan through the ORM (any database)."""
    if plan.created:
        conversation = new_conversation(source, parsed, plan, now)
        conversation.save(force_insert=True)
    else:
        assert row is not None
        conversation = row
    if plan.change is plans.Change.UNCHANGED:
        return conversation
    refs = Refs(_allocate_ids(Message, len(plan.messages)), _allocate_ids(ToolCall, len(plan.calls)))
    rows = plan_rows(plan, conversation.pk, refs, now)
    Message.objects.bulk_create(
        [Message(**dict(zip(MESSAGE_COLUMNS, values, strict=True))) for values in rows.messages]
    )
    ToolCall.objects.bulk_create([ToolCall(**dict(zip(CALL_COLUMNS, values, strict=True))) for values in rows.calls])
    InjectedArtifact.objects.bulk_create(
        [InjectedArtifact(**dict(zip(ARTIFACT_COLUMNS, values, strict=True))) for values in rows.artifacts]
    )
    Feedback.objects.bulk_create(
        [Feedback(**dict(zip(FEEDBACK_COLUMNS, values, strict=True))) for values in rows.feedback]
    )
    plans_rewrite_verdicts([(plan, conversation.pk)])
    ContextArtifactId.objects.bulk_create(
        [ContextArtifactId(**dict(zip(CONTEXT_ID_COLUMNS, values, strict=True))) for values in rows.context_ids]
    )
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
