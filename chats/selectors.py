"""Reads for the review pages, each a fixed number of queries whatever the size of the data.

The thread reads the conversation's tree skeleton (ids and parents only) once, works out the path to show and every
branch point from it in Python, then loads the messages of that path, their tool calls, injected artifacts and
feedback (with labels) in one query each.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from chats import rendering
from chats.models import (
    AuditEvent,
    Conversation,
    Feedback,
    FeedbackLabel,
    InjectedArtifact,
    Label,
    Message,
    ReviewStatus,
    Score,
    ToolCall,
)

# --------------------------------------------------------------------------------------------------------------
# The conversation list: keyset pagination on (last_activity_at, id)

PAGE_SIZE = 50


def encode_cursor(conversation: Conversation) -> str:
    raw = f"{conversation.last_activity_at.isoformat()}|{conversation.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, int] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, pk = raw.rsplit("|", 1)
        parsed = dt.datetime.fromisoformat(moment)
        if parsed.tzinfo is None:
            return None
        return parsed, int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


@dataclass
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
    """One page of ``queryset`` in time order: one query, no COUNT, as fast on page 1000 as on page 1.

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
# The thread


@dataclass
class BranchPoint:
    """Where a message has siblings: "index of count", and the neighbours to switch to."""

    index: int  # 1-based
    count: int
    previous_id: int | None
    next_id: int | None


@dataclass
class CallView:
    """A tool call as its marker shows it: the arguments pretty-printed, and what it injected."""

    call: ToolCall
    artifacts: list[InjectedArtifact] = field(default_factory=list)

    @property
    def arguments_text(self) -> str:
        if self.call.parsed_arguments is not None and not self.call.arguments_error:
            # Indented, unless too deep to indent (see rendering.pretty_json).
            return rendering.pretty_json(self.call.parsed_arguments)
        return self.call.arguments


@dataclass
class ThreadMessage:
    message: Message
    calls: list[CallView] = field(default_factory=list)
    answers: list[ToolCall] = field(default_factory=list)  # for a tool message: the call(s) it answers
    feedback: list[Feedback] = field(default_factory=list)
    own_feedback: Feedback | None = None
    branch: BranchPoint | None = None

    @property
    def id(self) -> int:
        return self.message.pk

    @property
    def is_set_apart(self) -> bool:
        """System, developer and scenario messages: shown apart from the dialogue."""
        return self.message.section == "scenario" or self.message.role in ("system", "developer")


@dataclass
class Thread:
    conversation: Conversation
    messages: list[ThreadMessage]
    conversation_feedback: list[Feedback]
    own_conversation_feedback: Feedback | None
    labels: list[Label]
    on_active_path: bool  # the path shown is the stored active path
    at: int | None  # the message the path was chosen through, when not the active one

    @property
    def message_ids(self) -> set[int]:
        return {item.message.pk for item in self.messages}


def _path_through(
    parent_of: dict[int, int | None], children_of: dict[int | None, list[int]], message_id: int
) -> list[int]:
    """Root to ``message_id``, then down through the newest child at each step to a leaf."""
    path = []
    node: int | None = message_id
    while node is not None:
        path.append(node)
        node = parent_of[node]
    path.reverse()
    node = message_id
    while children_of.get(node):
        node = max(children_of[node])  # ids grow with arrival: the newest child
        path.append(node)
    return path


def _on_path(prefix: str, path: list[int], *, active: bool) -> Q:
    """Rows on the path shown, through ``prefix`` (a message foreign key and "__", or "" for messages themselves).

    The active path (nearly every visit) is picked by its flag, not by the list of every id on it: binding and sending
    a thousand parameters costs more than running the query.
    """
    if active:
        return Q(**{f"{prefix}on_active_path": True})
    return Q(**{f"{prefix}id__in": path})


def thread_read(conversation: Conversation, *, user: Any, at: int | None = None) -> Thread:
    """The messages to show and everything shown with them, in seven queries whatever the thread's size."""
    skeleton = list(
        Message.objects.filter(conversation=conversation)
        .order_by("id")
        .values_list("id", "parent_id", "on_active_path")
    )
    parent_of: dict[int, int | None] = {}
    children_of: dict[int | None, list[int]] = defaultdict(list)
    active: list[int] = []
    for pk, parent_id, on_path in skeleton:
        parent_of[pk] = parent_id
        children_of[parent_id].append(pk)
        if on_path:
            active.append(pk)

    if at is not None and at in parent_of:
        path = _path_through(parent_of, children_of, at)
        on_active_path = set(path) == set(active)
    elif active:
        path, on_active_path, at = active, True, None
    elif skeleton:
        path, on_active_path, at = _path_through(parent_of, children_of, skeleton[-1][0]), False, None
    else:
        path, on_active_path, at = [], True, None

    messages = list(
        Message.objects.filter(_on_path("", path, active=on_active_path), conversation=conversation)
        .defer("raw", "extra", "author_metadata")  # not shown
        .order_by("depth", "id")
    )
    items = {m.pk: ThreadMessage(message=m) for m in messages}
    for item in items.values():
        siblings = children_of[item.message.parent_id]
        if len(siblings) > 1:
            index = siblings.index(item.message.pk)
            item.branch = BranchPoint(
                index=index + 1,
                count=len(siblings),
                previous_id=siblings[index - 1] if index > 0 else None,
                next_id=siblings[index + 1] if index + 1 < len(siblings) else None,
            )

    calls = list(
        ToolCall.objects.filter(conversation=conversation)
        .filter(
            _on_path("message__", path, active=on_active_path)
            | _on_path("result_message__", path, active=on_active_path)
        )
        .defer("extra")
        .order_by("message_id", "index")
    )
    views: dict[int, CallView] = {}
    for call in calls:
        if call.message_id in items:
            views[call.pk] = CallView(call)
            items[call.message_id].calls.append(views[call.pk])
        if call.result_message_id in items:
            items[call.result_message_id].answers.append(call)

    artifacts = InjectedArtifact.objects.filter(_on_path("message__", path, active=on_active_path))
    for artifact in artifacts.filter(conversation=conversation).order_by("id"):
        if artifact.tool_call_id in views:
            views[artifact.tool_call_id].artifacts.append(artifact)

    conversation_feedback: list[Feedback] = []
    own_conversation_feedback = None
    feedback = (
        Feedback.objects.filter(conversation=conversation)
        .filter(Q(message__isnull=True) | _on_path("message__", path, active=on_active_path))
        .select_related("author")
        .prefetch_related("labels")
    )
    for entry in feedback:
        own = entry.author_id is not None and entry.author_id == getattr(user, "pk", None)
        if entry.message_id is None:
            conversation_feedback.append(entry)
            if own:
                own_conversation_feedback = entry
        elif entry.message_id in items:
            items[entry.message_id].feedback.append(entry)
            if own:
                items[entry.message_id].own_feedback = entry

    return Thread(
        conversation=conversation,
        messages=[items[m.pk] for m in messages],
        conversation_feedback=conversation_feedback,
        own_conversation_feedback=own_conversation_feedback,
        labels=list(Label.objects.all()),
        on_active_path=on_active_path,
        at=at,
    )


def feedback_for_target(conversation: Conversation, message: Message | None) -> list[Feedback]:
    """The feedback on one message (or on the conversation itself), for re-rendering its block."""
    return list(
        Feedback.objects.filter(conversation=conversation, message=message)
        .select_related("author")
        .prefetch_related("labels")
    )


# --------------------------------------------------------------------------------------------------------------
# The dashboard


@dataclass
class Dashboard:
    total: int
    by_source: list[tuple[str, int]]
    by_model: list[tuple[str, int]]
    by_status: list[tuple[str, int]]
    by_score: list[tuple[str, int]]
    by_label: list[tuple[str, int]]
    top_tools: list[tuple[str, int]]
    top_artifacts: list[tuple[str, str, int]]
    recent_events: list[AuditEvent]


def dashboard_read(*, top: int = 10) -> Dashboard:
    by_source = [
        (row["source__name"], row["n"])
        for row in Conversation.objects.values("source__name").annotate(n=Count("id")).order_by("-n", "source__name")
    ]
    by_model = [
        (row["model_name"] or "(none)", row["n"])
        for row in Conversation.objects.values("model_name").annotate(n=Count("id")).order_by("-n", "model_name")[:top]
    ]
    status_counts = dict(Conversation.objects.values_list("review_status").annotate(n=Count("id")).order_by())
    by_status = [(label, status_counts.get(value, 0)) for value, label in ReviewStatus.choices]
    score_counts = dict(
        Feedback.objects.filter(score__isnull=False).values_list("score").annotate(n=Count("id")).order_by()
    )
    by_score = [(label, score_counts.get(value, 0)) for value, label in reversed(Score.choices)]
    by_label = [
        (row["label__name"], row["n"])
        for row in FeedbackLabel.objects.values("label__name").annotate(n=Count("id")).order_by("-n")[:top]
    ]
    top_tools = [
        (row["name"] or "(unnamed)", row["n"])
        for row in ToolCall.objects.values("name").annotate(n=Count("id")).order_by("-n", "name")[:top]
    ]
    top_artifacts = [
        (row["artifact_id"], row["kind"], row["n"])
        for row in InjectedArtifact.objects.values("artifact_id", "kind")
        .annotate(n=Count("id"))
        .order_by("-n", "artifact_id")[:top]
    ]
    return Dashboard(
        total=sum(status_counts.values()),
        by_source=by_source,
        by_model=by_model,
        by_status=by_status,
        by_score=by_score,
        by_label=by_label,
        top_tools=top_tools,
        top_artifacts=top_artifacts,
        recent_events=list(AuditEvent.objects.order_by("-created_at", "-id")[:15]),
    )
