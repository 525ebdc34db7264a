"""Conversations: the list's keyset pages and the review queue (shared by the pages and the API), and one
conversation with everything the API shows with it.

Pages are keyset pages on (last_activity_at, id): a cursor names a row, not an offset, so a page costs one query,
no COUNT, as fast on page 1000 as on page 1, and conversations that arrive while a client pages neither repeat a
row nor make it skip one.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q, QuerySet

from chats import cursors
from chats.formats import canonical as c
from chats.models import ContextArtifactId, Conversation, Feedback, InjectedArtifact, Message, ReviewStatus, ToolCall
from chats.selectors.exports import Branch, canonical_artifact
from chats.selectors.search import BoundedCount
from chats.selectors.threads import PathWindow, call_span

PAGE_SIZE = 50
# Heavy columns the list never shows.
LIST_DEFERRED = ("title_vector", "metadata", "scenario", "injection_context", "model_config", "context_pairs")


def conversation_list(queryset: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """``queryset`` as a list shows it: with the source's name, without the heavy columns."""
    return queryset.select_related("source").defer(*LIST_DEFERRED)


# The list's result count is exact up to this many conversations, "more than" past it.
RESULT_COUNT_LIMIT = 1000


def conversation_count_bounded(queryset: QuerySet[Conversation]) -> BoundedCount:
    """How many conversations ``queryset`` (the list's, filtered) holds: one query reading at most
    RESULT_COUNT_LIMIT + 1 ids, so that a broad filter over a million rows costs what a page of a thousand does."""
    count = queryset.order_by().values("id")[: RESULT_COUNT_LIMIT + 1].count()
    if count > RESULT_COUNT_LIMIT:
        return BoundedCount(RESULT_COUNT_LIMIT, more=True)
    return BoundedCount(count, more=False)


def conversation_one(queryset: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """``queryset`` for reading a conversation whole: every column but the search vector, and the source."""
    return queryset.select_related("source").defer("title_vector")


# --------------------------------------------------------------------------------------------------------------
# Keyset pages


def encode_cursor(conversation: Conversation) -> str:
    """A signed cursor naming ``conversation``'s place in the list (`chats.cursors`)."""
    return cursors.encode("conversations", [conversation.last_activity_at.isoformat(), conversation.pk])


def decode_cursor(cursor: str) -> tuple[dt.datetime, int] | None:
    """The (moment, id) a cursor of encode_cursor names, or None for anything else: a cursor not given out here,
    a moment that is not a real instant in UTC (year 1 at +23:59), or an id that is not a row's."""
    values = cursors.decode(cursor, "conversations")
    if values is None or len(values) != 2:
        return None
    moment, pk = cursors.moment(values[0]), cursors.row_id(values[1])
    if moment is None or pk is None:
        return None
    return moment, pk


@dataclass(frozen=True, slots=True)
class Page:
    conversations: list[Conversation]
    next_cursor: str | None
    previous_cursor: str | None


def _beyond(cursor: tuple[dt.datetime, int], *, older: bool) -> Q:
    moment, pk = cursor
    if older:
        return Q(last_activity_at__lt=moment) | Q(last_activity_at=moment, id__lt=pk)
    return Q(last_activity_at__gt=moment) | Q(last_activity_at=moment, id__gt=pk)


def conversation_page(
    queryset: QuerySet[Conversation],
    *,
    after: str | None = None,
    before: str | None = None,
    oldest_first: bool = False,
    size: int = PAGE_SIZE,
) -> Page:
    """One page of ``queryset`` in time order, in one query.

    ``after`` continues past a page's last row; ``before`` goes back from a page's first row.
    """
    # "Forward" is the reading direction: newest to oldest unless oldest_first.
    forward = ("last_activity_at", "id") if oldest_first else ("-last_activity_at", "-id")
    backward = tuple(name.lstrip("-") if name.startswith("-") else f"-{name}" for name in forward)
    after_key = decode_cursor(after) if after else None
    before_key = decode_cursor(before) if before and not after_key else None

    if before_key:
        rows = list(queryset.filter(_beyond(before_key, older=oldest_first)).order_by(*backward)[: size + 1])
        has_more_before = len(rows) > size
        rows = rows[:size][::-1]
        return Page(
            conversations=rows,
            next_cursor=encode_cursor(rows[-1]) if rows else None,
            previous_cursor=encode_cursor(rows[0]) if rows and has_more_before else None,
        )
    filtered = queryset.filter(_beyond(after_key, older=not oldest_first)) if after_key else queryset
    rows = list(filtered.order_by(*forward)[: size + 1])
    has_more = len(rows) > size
    rows = rows[:size]
    return Page(
        conversations=rows,
        next_cursor=encode_cursor(rows[-1]) if rows and has_more else None,
        previous_cursor=encode_cursor(rows[0]) if rows and after_key else None,
    )


def next_in_queue(queryset: QuerySet[Conversation], current: Conversation | None) -> Conversation | None:
    """The conversation after ``current`` in the list order (newest first) that still needs review, wrapping
    around to the newest; None when the queue is empty."""
    ordered = queryset.exclude(review_status=ReviewStatus.REVIEWED).order_by("-last_activity_at", "-id")
    if current is not None:
        found = ordered.filter(_beyond((current.last_activity_at, current.pk), older=True)).first()
        if found is not None:
            return found
        return ordered.exclude(pk=current.pk).first()
    return ordered.first()


# --------------------------------------------------------------------------------------------------------------
# One conversation, as the API shows it


@dataclass(frozen=True, slots=True)
class DetailToolCall:
    call: ToolCall
    result_message_key: str | None  # the tool message answering the call, on any branch


@dataclass(frozen=True, slots=True)
class DetailMessage:
    message: Message
    parent_key: str | None
    tool_calls: list[DetailToolCall]

    @property
    def model_call(self) -> dict[str, Any] | None:
        """The model call the message is the output of (OpenTelemetry ingestion), else None."""
        span = call_span(self.message)
        return span.as_json() if span is not None else None


@dataclass(frozen=True, slots=True)
class DetailArtifact:
    artifact: c.Artifact
    verdict: str | None  # against the injection context (None: the conversation has none)


@dataclass(frozen=True, slots=True)
class ConversationDetail:
    conversation: Conversation
    branch: Branch
    messages: list[DetailMessage]
    artifacts: list[DetailArtifact]
    feedback: list[Feedback]  # on the conversation, or on one of the listed messages
    context_ids: list[ContextArtifactId]  # the ids its injection context lists, and what became of them
    window: PathWindow | None = None  # the part of the active path listed, when a window was asked for


def conversation_detail(
    conversation: Conversation, *, branch: Branch, window: PathWindow | None = None
) -> ConversationDetail:
    """The messages (the active path, or every branch; or ``window``, a window of the active path decided by
    ``chats.selectors.threads.path_window``), their tool calls, the artifacts and the feedback, in five queries
    whatever the conversation's size; a sixth for the ids its injection context lists, when it has one; a window
    that starts past the root adds one, for the key of its first message's parent."""
    if window is not None:
        messages = window.messages
    else:
        rows = Message.objects.filter(conversation=conversation).defer("raw")
        rows = rows.filter(on_active_path=True).order_by("depth") if branch == "active" else rows.order_by("position")
        messages = list(rows)
    by_pk = {message.pk: message for message in messages}
    key_of = {message.pk: message.key for message in messages}
    if window is not None:  # the parent of the window's first message is outside it
        outside = {m.parent_id for m in messages if m.parent_id is not None and m.parent_id not in by_pk}
        key_of.update(Message.objects.filter(pk__in=outside).values_list("pk", "key"))

    call_rows = ToolCall.objects.filter(conversation=conversation).order_by("message_id", "index", "id")
    if window is not None:
        call_rows = call_rows.filter(message_id__in=list(by_pk))
    elif branch == "active":
        call_rows = call_rows.filter(message__on_active_path=True)
    calls_of: dict[int, list[DetailToolCall]] = defaultdict(list)
    call_ids: dict[int, str] = {}
    # A result outside the listed messages (another branch) is still named by its key: read it with the call.
    for call in call_rows.annotate(result_key=F("result_message__key")):
        calls_of[call.message_id].append(DetailToolCall(call=call, result_message_key=call.result_key))
        call_ids[call.pk] = call.call_id

    artifacts = [
        DetailArtifact(canonical_artifact(artifact, key_of=key_of, call_ids=call_ids), artifact.verdict)
        for artifact in InjectedArtifact.objects.filter(conversation=conversation, message_id__in=list(by_pk)).order_by(
            "id"
        )
    ]
    context_ids = (
        list(ContextArtifactId.objects.filter(conversation=conversation).order_by("id"))
        if conversation.policy_violation is not None
        else []
    )

    feedback = []
    feedback_rows = Feedback.objects.filter(conversation=conversation)
    if window is not None:
        feedback_rows = feedback_rows.filter(Q(message__isnull=True) | Q(message_id__in=list(by_pk)))
    for entry in feedback_rows.select_related("author").prefetch_related("labels").order_by("created_at", "id"):
        if entry.message_id is not None:
            if entry.message_id not in by_pk:
                continue
            entry.message = by_pk[entry.message_id]  # the row already read: no query per entry
        entry.conversation = conversation
        feedback.append(entry)

    return ConversationDetail(
        conversation=conversation,
        branch=branch,
        messages=[
            DetailMessage(
                message=message,
                parent_key=key_of.get(message.parent_id) if message.parent_id else None,
                tool_calls=calls_of.get(message.pk, []),
            )
            for message in messages
        ],
        artifacts=artifacts,
        feedback=feedback,
        context_ids=context_ids,
        window=window,
    )
