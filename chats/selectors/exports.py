"""From the database back to the canonical form, for the exporters (`chats.export`) and the training JSONL.

`conversation_to_canonical` rebuilds one conversation; `iter_canonical` streams a filtered set in batches with a
fixed number of queries per batch (conversations, messages, tool calls, artifacts, imported feedback, and for
training the reviewers' corrections; for the envelope's policy verdicts, the ids the injection contexts list when
a conversation of the batch has one), whatever the number of conversations or messages.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import QueryDict

from chats.export import FORMATS, export_conversation, training_record
from chats.filters.exports import ExportFilter
from chats.formats import canonical as c
from chats.models import (
    ContentForm,
    ContextArtifactId,
    Conversation,
    Feedback,
    FeedbackOrigin,
    InjectedArtifact,
    Message,
    Source,
    ToolCall,
)

Branch = Literal["active", "all"]
TRAINING = "training"
# What a bulk export (and an export job) may be asked for: each conversation format, and the training JSONL.
BULK_EXPORT_FORMATS = (*sorted(FORMATS), TRAINING)
NDJSON = "application/x-ndjson"

# A batch holds at most this many conversations, and stops growing once it holds this many messages, so that a
# stream of long conversations keeps a bounded memory.
BATCH_CONVERSATIONS = 100
BATCH_MESSAGES = 5000


@dataclass(slots=True)
class Exportable:
    """A stored conversation, its canonical form, and what the training export needs to know about it."""

    conversation: Conversation
    canonical: c.Conversation
    feedback_ids: list[str] = field(default_factory=list)  # every feedback on the conversation
    corrections: dict[str, str] = field(default_factory=dict)  # message key -> a reviewer's corrected answer
    correction_ids: list[str] = field(default_factory=list)  # the feedback those corrections come from
    verdicts: list[str | None] = field(default_factory=list)  # of canonical.artifacts, in their order
    context_ids: list[ContextArtifactId] = field(default_factory=list)  # the ids its injection context lists

    def policy(self) -> dict[str, Any] | None:
        """The injection policy verdicts (chats.ingest.policy), beside the document rather than in it (a format
        has no place for them, and the document must go back in as it came): None without an injection context."""
        if self.conversation.policy_violation is None:
            return None
        return {
            "violation": self.conversation.policy_violation,
            "artifacts": [
                {
                    "kind": artifact.kind,
                    "artifact_id": artifact.artifact_id,
                    "tool_call_id": artifact.tool_call_id,
                    "message_key": artifact.message_key,
                    "verdict": verdict,
                }
                for artifact, verdict in zip(self.canonical.artifacts, self.verdicts, strict=True)
            ],
            "context_ids": [
                {
                    "kind": listed.kind,
                    "artifact_id": listed.artifact_id,
                    "id_well_formed": listed.id_well_formed,
                    "state": listed.state,
                }
                for listed in self.context_ids
            ],
        }

    def provenance(self) -> dict[str, Any]:
        """Where a training line came from."""
        conversation = self.conversation
        return {
            "conversation": str(conversation.uuid),
            "source": conversation.source.name,
            "external_id": conversation.external_id,
            "format": conversation.input_format,
            "review_status": conversation.review_status,
            "policy_violation": conversation.policy_violation,
            "feedback": list(self.feedback_ids),
            "corrections": list(self.correction_ids),
        }


def conversation_to_canonical(conversation: Conversation, *, branch: Branch = "active") -> c.Conversation:
    """The conversation as the parsers would have produced it: the active path, or the whole tree (`"all"`)."""
    [item] = _load_batch([conversation], branch=branch, training=False, policy=False)
    return item.canonical


def iter_canonical(
    queryset: QuerySet[Conversation],
    *,
    branch: Branch = "all",
    training: bool = False,
    policy: bool = False,
    batch_conversations: int = BATCH_CONVERSATIONS,
    batch_messages: int = BATCH_MESSAGES,
) -> Iterator[Exportable]:
    """Every conversation of `queryset`, newest first, rebuilt batch by batch (with `policy`, the ids their
    injection contexts list too, for `Exportable.policy`).

    Batches follow the list order by keyset (`last_activity_at`, `id`), so a conversation that arrives during the
    stream neither repeats nor shifts one already sent. Each batch costs one query per table.
    """
    ordered = queryset.select_related("source").order_by("-last_activity_at", "-id")
    position: tuple[dt.datetime, int] | None = None
    while True:
        page = ordered
        if position is not None:
            moment, pk = position
            page = page.filter(Q(last_activity_at__lt=moment) | Q(last_activity_at=moment, id__lt=pk))
        rows = list(page[:batch_conversations])
        if not rows:
            return
        batch: list[Conversation] = []
        messages = 0
        for row in rows:
            batch.append(row)
            messages += row.message_count
            if messages >= batch_messages:
                break
        yield from _load_batch(batch, branch=branch, training=training, policy=policy)
        last = batch[-1]
        position = (last.last_activity_at, last.pk)
        if len(rows) < batch_conversations and len(batch) == len(rows):
            return


def export_lines(queryset: QuerySet[Conversation], format: str, *, envelope: bool = False) -> Iterator[bytes]:
    """NDJSON: each conversation exported in `format` on a line of its own, or its training record (`"training"`).

    A plain line is the exported document, so it can be ingested again; with `envelope` it is wrapped with the
    conversation's uuid, its source, what the format left out and the injection policy verdicts.
    """
    training = format == TRAINING
    for item in iter_canonical(
        queryset, branch="active" if training else "all", training=training, policy=envelope and not training
    ):
        line: Any
        if training:
            line = training_record(item.canonical, corrections=item.corrections, provenance=item.provenance())
        else:
            result = export_conversation(item.canonical, format)
            line = result.document
            if envelope:
                line = {
                    "conversation": str(item.conversation.uuid),
                    "source": item.conversation.source.name,
                    "omitted": result.omitted,
                    "policy": item.policy(),
                    "document": result.document,
                }
        yield (json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()


@dataclass(frozen=True)
class BulkExport:
    """A bulk export as asked for: the format, the envelope, and the export's filters over the conversations the
    asker may read. The synchronous export (`GET /api/v1/export/`) streams `chunks()`; an export job
    (chats.services.export_jobs, run by the task chats.tasks.exports) stores the same chunks, so both give the same bytes for the same request."""

    filterset: ExportFilter
    format: str
    envelope: bool = False

    @property
    def content_type(self) -> str:
        return NDJSON

    @property
    def filename(self) -> str:
        suffix = "jsonl" if self.format == TRAINING else "ndjson"
        return f"conversations-{self.format}.{suffix}"

    def errors(self) -> dict[str, list[str]]:
        """What is wrong with the filters, by parameter name (empty when they are valid)."""
        return (
            {} if self.filterset.is_valid() else {name: list(errors) for name, errors in self.filterset.errors.items()}
        )

    def queryset(self) -> QuerySet[Conversation]:
        """The conversations to export (the filters must be valid)."""
        queryset: QuerySet[Conversation] = self.filterset.qs
        return queryset

    def chunks(self) -> Iterator[bytes]:
        """The export's bytes, one conversation per chunk (a line), newest first."""
        return export_lines(self.queryset(), self.format, envelope=self.envelope)


def bulk_export(
    data: object, *, format: str, reader: User | None, envelope: bool = False, source: Source | None = None
) -> BulkExport:
    """The bulk export of `data`'s filters (a QueryDict or a mapping of names to values or lists of values) in
    `format`: over every conversation for a person with a reading role, over its own source's for a source's key
    (`source`). `reader` is the person it is for (None for a key): `reviewed_by` names only the reviews they may
    know of, as on the list."""
    readable = Conversation.objects.all() if source is None else Conversation.objects.filter(source=source)
    filterset = ExportFilter(data, queryset=readable, reader=reader)
    return BulkExport(filterset=filterset, format=format, envelope=envelope)


def filters_query(filters: dict[str, list[str]]) -> QueryDict:
    """Filters stored as names and lists of values (an export job's) as the query string they came from."""
    query = QueryDict(mutable=True)
    for name, values in filters.items():
        query.setlist(name, list(values))
    return query


def _load_batch(
    conversations: Sequence[Conversation], *, branch: Branch, training: bool, policy: bool
) -> list[Exportable]:
    ids = [conversation.pk for conversation in conversations]
    message_rows = Message.objects.filter(conversation_id__in=ids)
    if branch == "active":
        message_rows = message_rows.filter(on_active_path=True)
    messages_of: dict[int, list[Message]] = defaultdict(list)
    key_of: dict[int, str] = {}
    for message in message_rows.order_by("conversation_id", "position"):
        messages_of[message.conversation_id].append(message)
        key_of[message.pk] = message.key

    calls_of: dict[int, list[ToolCall]] = defaultdict(list)
    call_ids: dict[int, str] = {}
    call_rows = ToolCall.objects.filter(conversation_id__in=ids)
    artifact_rows = InjectedArtifact.objects.filter(conversation_id__in=ids)
    if branch == "active":
        call_rows = call_rows.filter(message__on_active_path=True)
        artifact_rows = artifact_rows.filter(message__on_active_path=True)
    for call in call_rows.order_by("message_id", "index", "id"):
        calls_of[call.message_id].append(call)
        call_ids[call.pk] = call.call_id

    artifacts_of: dict[int, list[c.Artifact]] = defaultdict(list)
    verdicts_of: dict[int, list[str | None]] = defaultdict(list)
    for artifact in artifact_rows.order_by("id"):
        artifacts_of[artifact.conversation_id].append(canonical_artifact(artifact, key_of=key_of, call_ids=call_ids))
        verdicts_of[artifact.conversation_id].append(artifact.verdict)

    context_ids_of: dict[int, list[ContextArtifactId]] = defaultdict(list)
    with_context = [conversation.pk for conversation in conversations if conversation.policy_violation is not None]
    if with_context and policy:
        for listed in ContextArtifactId.objects.filter(conversation_id__in=with_context).order_by("id"):
            context_ids_of[listed.conversation_id].append(listed)

    imported_of: dict[int, list[c.Feedback]] = defaultdict(list)
    feedback_ids_of: dict[int, list[str]] = defaultdict(list)
    corrections_of: dict[int, dict[str, tuple[dt.datetime, str, str]]] = defaultdict(dict)
    feedback_rows = Feedback.objects.filter(conversation_id__in=ids).order_by("created_at", "id")
    if not training:
        feedback_rows = feedback_rows.exclude(origin=FeedbackOrigin.REVIEWER)
    for feedback in feedback_rows:
        on_loaded = feedback.message_id is None or feedback.message_id in key_of
        if feedback.origin != FeedbackOrigin.REVIEWER and on_loaded:
            imported_of[feedback.conversation_id].append(
                c.Feedback(
                    origin=feedback.origin,
                    message_key=key_of[feedback.message_id] if feedback.message_id else None,
                    score=feedback.score,
                    comment=feedback.comment,
                    raw=feedback.raw,
                )
            )
        feedback_ids_of[feedback.conversation_id].append(str(feedback.uuid))
        if feedback.correction and feedback.message_id in key_of:
            # Several reviewers may correct the same answer: the most recent correction wins.
            key = key_of[feedback.message_id]
            current = corrections_of[feedback.conversation_id].get(key)
            if current is None or feedback.updated_at >= current[0]:
                corrections_of[feedback.conversation_id][key] = (
                    feedback.updated_at,
                    feedback.correction,
                    str(feedback.uuid),
                )

    result = []
    for conversation in conversations:
        rows = messages_of.get(conversation.pk, [])
        canonical_messages = [_message(row, key_of, calls_of.get(row.pk, [])) for row in rows]
        canonical = c.Conversation(
            format=conversation.input_format,
            messages=canonical_messages,
            external_id=None if conversation.external_id_generated else conversation.external_id,
            title=conversation.title,
            user_id=conversation.user_external_id,
            model_name=conversation.model_name,
            model=conversation.model_config,
            started_at=conversation.started_at,
            ended_at=conversation.ended_at,
            scenario=conversation.scenario,
            injection_context=conversation.injection_context,
            context_pairs=[list(pair) for pair in conversation.context_pairs or []],
            metadata=dict(conversation.metadata or {}),
            # getattr: the column arrives with its migration; until then there are no original times.
            original_times=dict(getattr(conversation, "original_times", None) or {}),
            active_leaf_key=conversation.active_leaf_key or None,
            artifacts=artifacts_of.get(conversation.pk, []),
            feedback=imported_of.get(conversation.pk, []),
        )
        corrections = corrections_of.get(conversation.pk, {})
        result.append(
            Exportable(
                conversation=conversation,
                canonical=canonical,
                feedback_ids=feedback_ids_of.get(conversation.pk, []),
                corrections={key: text for key, (_, text, _) in corrections.items()},
                correction_ids=[feedback_id for _, _, feedback_id in corrections.values()],
                verdicts=verdicts_of.get(conversation.pk, []),
                context_ids=context_ids_of.get(conversation.pk, []),
            )
        )
    return result


def canonical_artifact(artifact: InjectedArtifact, *, key_of: dict[int, str], call_ids: dict[int, str]) -> c.Artifact:
    """An injected artifact in canonical form, given the keys of the loaded messages and the ids of their calls."""
    return c.Artifact(
        kind=artifact.kind,
        artifact_id=artifact.artifact_id,
        id_well_formed=artifact.id_well_formed,
        tool_call_id=call_ids.get(artifact.tool_call_id, ""),
        message_key=key_of[artifact.message_id],
        tool_name=artifact.tool_name,
        requested=artifact.requested,
        resolved=artifact.resolved,
        payload=artifact.payload,
    )


def _message(row: Message, key_of: dict[int, str], calls: list[ToolCall]) -> c.Message:
    return c.Message(
        key=row.key,
        role=row.role,
        parent_key=key_of.get(row.parent_id) if row.parent_id else None,
        content_key=row.content_key,  # what a review's pinned path is hashed by (chats.review.pinning)
        # The id the message first came with (a node id, a mapping id); a message of a linear history has none.
        input_id=row.aliases[0] if row.aliases else "",
        name=row.name,
        parts=list(row.parts or []),
        content_is_null=row.content_form == ContentForm.NULL,
        content_is_string=row.content_form == ContentForm.STRING,
        text=row.text,
        reasoning=row.reasoning,
        context_pairs=[list(pair) for pair in row.context_pairs or []],
        author_metadata=dict(row.author_metadata or {}),
        created_at=row.sent_at,
        tool_calls=[
            c.ToolCall(
                call_id=call.call_id,
                type=call.type,
                name=call.name,
                arguments=call.arguments,
                parsed_arguments=call.parsed_arguments,
                arguments_error=call.arguments_error,
                index=call.index,
                extra=dict(call.extra or {}),
            )
            for call in calls
        ],
        tool_call_id=row.tool_call_id,
        hidden=row.hidden,
        recipient=row.recipient,
        section=row.section,
        extra=dict(row.extra or {}),
        raw=row.raw,
        source_path=row.source_path,
    )
