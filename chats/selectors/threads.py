"""A conversation's thread as the review page shows it: a window of the path, in a fixed number of queries whatever
the thread's size.

The path shown is the active one (read by its flag on the partial index of (conversation, depth)) or, for another
branch (``at``), the one through a message, worked out from the conversation's tree skeleton (ids and parents only).
A *window* is a slice of that path by position (a message's depth: its place along any path from the root): the
first messages, the ones after a position, or the ones around a message, at most ``limit`` of them and up to a byte
budget. ``path_window`` decides every window (the page's first screen, the chunks it loads, the API's windows);
``thread_read`` loads the window's tool calls, injected artifacts and feedback (with labels) in one query each.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack
from urllib.parse import quote

from django.conf import settings
from django.db.models import Q

from chats import rendering
from chats.models import Conversation, Feedback, InjectedArtifact, Label, Message, Section, ToolCall

# The page's first window: a screen and more, and no more than that, so that a thread of any length opens as fast as
# a short one (make bench: "P3 thread first response").
FIRST_WINDOW = 50
# Each chunk the page loads after it, and the API's window when only ?after= is given.
WINDOW_SIZE = 100
# The most messages one request may ask for (the API's ?limit=).
WINDOW_LIMIT_MAX = 500
# The page's windows also stop once their messages carry this many characters (at least one message, and the one a
# permalink names, are always in): a thread of long tool results fills a screen in fewer messages.
WINDOW_BYTES = 250_000
# A window around a message (a permalink) starts this many messages before it, for context (or earlier, near the
# end of the path, so that the window is full).
AROUND_BEFORE = 5
# Messages shown apart from the dialogue (and listed among the prompts "given to the model"): these roles, and the
# scenario section.
SET_APART_ROLES = ("system", "developer")


def set_apart() -> Q:
    """The messages ``ThreadMessage.is_set_apart`` names, as a filter."""
    return Q(section=Section.SCENARIO) | Q(role__in=SET_APART_ROLES)


@dataclass(frozen=True)
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


_SPAN_FORMS = frozenset({"genai", "openinference", "openllmetry"})
_HEX_ID = re.compile(r"[0-9a-f]{1,64}")


@dataclass(frozen=True)
class CallSpan:
    """The model call a message is the output of, as its OpenTelemetry span told it (``chats.ingest.otel`` keeps it
    in the message's ``otel`` key): shown with the message, and in the API as its ``model_call``."""

    trace_id: str
    span_id: str
    provider: str
    model: str
    latency_ms: int | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reasons: list[str]

    @property
    def trace_url(self) -> str:
        """The span in the team's tracing UI (MASTERBRAIN_TRACE_URL_TEMPLATE), "" when none is set."""
        template = settings.MASTERBRAIN_TRACE_URL_TEMPLATE
        if not template or not self.trace_id:
            return ""
        return template.format(trace_id=quote(self.trace_id, safe=""), span_id=quote(self.span_id, safe=""))

    def as_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "trace_url": self.trace_url or None,
            "provider": self.provider,
            "model": self.model,
            "latency_ms": self.latency_ms,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reasons": self.finish_reasons,
        }


def call_span(message: Message) -> CallSpan | None:
    """The message's model call (None when it is not a call's output); read defensively, since ``extra`` holds
    whatever a document sent."""
    value = message.extra.get("otel") if isinstance(message.extra, dict) else None
    if not isinstance(value, dict) or value.get("form") not in _SPAN_FORMS:
        return None

    def text(key: str) -> str:
        item = value.get(key)
        return item if isinstance(item, str) else ""

    def count(key: str) -> int | None:
        item = value.get(key)
        return item if isinstance(item, int) and not isinstance(item, bool) else None

    trace_id, span_id = text("trace_id"), text("span_id")
    reasons = value.get("finish_reasons")
    return CallSpan(
        trace_id=trace_id if _HEX_ID.fullmatch(trace_id) else "",
        span_id=span_id if _HEX_ID.fullmatch(span_id) else "",
        provider=text("provider"),
        model=text("response_model") or text("request_model"),
        latency_ms=count("latency_ms"),
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        finish_reasons=[r for r in reasons if isinstance(r, str)] if isinstance(reasons, list) else [],
    )


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
    def position(self) -> int:
        """0-based place along the path shown (the path runs from the root, one level a step)."""
        return self.message.depth

    @property
    def is_set_apart(self) -> bool:
        """System, developer and scenario messages: shown apart from the dialogue."""
        return self.message.section == Section.SCENARIO or self.message.role in SET_APART_ROLES

    @property
    def model_call(self) -> CallSpan | None:
        return call_span(self.message)

    @property
    def has_details(self) -> bool:
        """Whether the message carries author metadata or keys no parser knows (shown folded, verbatim)."""
        return bool(self.message.author_metadata or self.message.extra)


@dataclass(frozen=True)
class PathWindow:
    """Which messages of which path to show: the one decision the page, its chunks and the API share."""

    messages: list[Message]  # the window's messages, in path order
    start: int  # the position of the first (0-based along the path)
    end: int  # the position after the last
    total: int  # messages on the whole path
    on_active_path: bool  # the path is the stored active path
    at: int | None  # the message the path was chosen through, when not the active one
    around: int | None  # the message the window was asked around, when it is on the path
    path: list[int] | None  # every id on the path, when it had to be worked out (another branch)
    children_of: dict[int | None, list[int]] | None  # the tree, when its skeleton was read

    @property
    def next_after(self) -> int | None:
        """What ``after`` asks for the next window, or None at the end of the path."""
        return self.end - 1 if self.end < self.total else None

    @property
    def is_whole(self) -> bool:
        return self.start == 0 and self.end == self.total

    def on_path(self, prefix: str) -> Q:
        """Rows on the whole path (not only the window), through ``prefix`` (see ``_on_path``)."""
        return _on_path(prefix, self.path or [], active=self.on_active_path)


@dataclass(frozen=True)
class Thread:
    conversation: Conversation
    messages: list[ThreadMessage]  # the window's
    conversation_feedback: list[Feedback]
    own_conversation_feedback: Feedback | None
    labels: list[Label]
    window: PathWindow

    @property
    def on_active_path(self) -> bool:
        return self.window.on_active_path

    @property
    def at(self) -> int | None:
        return self.window.at

    @property
    def total(self) -> int:
        return self.window.total

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


def _size(message: Message) -> int:
    """Roughly what a message weighs on the page: its text, reasoning and parts (images inline are the big ones)."""
    parts = sum(len(str(value)) for part in message.parts for value in part.values()) if message.parts else 0
    return len(message.text) + len(message.reasoning) + parts


def _within_budget(messages: list[Message], budget: int, *, keep: int) -> list[Message]:
    """The first messages that fit ``budget`` characters: at least ``keep`` of them (and at least one)."""
    used = 0
    for count, message in enumerate(messages):
        used += _size(message)
        if used > budget and count >= max(keep, 1):
            return messages[:count]
    return messages


def path_window(
    conversation: Conversation,
    *,
    at: int | None = None,
    after: int | None = None,
    around: int | None = None,
    unanswered_after: int | None = None,
    limit: int | None = None,
    byte_budget: int | None = None,
) -> PathWindow:
    """The window of the path to show: from the start, after position ``after`` (exclusive), around message
    ``around`` (when it is on the path; else from the start), or around the first message past position
    ``unanswered_after`` with a tool call no message answers; ``limit`` messages at most (None: to the end), cut at
    ``byte_budget`` characters. The path is the active one, or the one through message ``at``.

    Two queries on the active path (its length, the window's messages), a third for ``around``; through another
    branch, the skeleton and the window's messages. None of them reads more rows than the window holds, except the
    skeleton (ids and parents), which only another branch needs.
    """
    path: list[int] | None = None
    children_of: dict[int | None, list[int]] | None = None
    on_active_path, total = True, 0
    last = None
    if at is None:
        last = (
            Message.objects.filter(conversation=conversation, on_active_path=True)
            .order_by("-depth")
            .values_list("depth", flat=True)
            .first()
        )
    if last is not None:
        total = last + 1
    else:  # another branch, or a tree without an active path (or no message at all): from the skeleton
        skeleton = list(
            Message.objects.filter(conversation=conversation)
            .order_by("id")
            .values_list("id", "parent_id", "on_active_path")
        )
        parent_of: dict[int, int | None] = {}
        children_of = defaultdict(list)
        active: list[int] = []
        for pk, parent_id, flagged in skeleton:
            parent_of[pk] = parent_id
            children_of[parent_id].append(pk)
            if flagged:
                active.append(pk)
        if at is not None and at in parent_of:
            path = _path_through(parent_of, children_of, at)
            on_active_path = set(path) == set(active)
        elif active:
            path, at = active, None
        elif skeleton:
            path, on_active_path, at = _path_through(parent_of, children_of, skeleton[-1][0]), False, None
        else:
            path, at = [], None
        total = len(path)

    target: int | None = None  # the position of ``around``
    if unanswered_after is not None:
        around = _next_unanswered(conversation, path, after=unanswered_after)
    if around is not None:
        if path is None:
            target = (
                Message.objects.filter(conversation=conversation, pk=around, on_active_path=True)
                .values_list("depth", flat=True)
                .first()
            )
        elif around in path:
            target = path.index(around)
    if target is not None:
        # A little before it, or further back when the path ends within the window: a full window either way.
        start = max(0, target - AROUND_BEFORE if limit is None else min(target - AROUND_BEFORE, total - limit))
    elif after is not None:
        start = min(after + 1, total)
    else:
        start = 0
    end = total if limit is None else min(total, start + limit)

    rows = Message.objects.filter(conversation=conversation).defer("raw").order_by("depth", "id")
    if path is None:
        rows = rows.filter(on_active_path=True)
        if start > 0 or end < total:
            rows = rows.filter(depth__gte=start, depth__lt=end)
    elif start == 0 and end == total:
        rows = rows.filter(_on_path("", path, active=on_active_path))
    else:
        rows = rows.filter(id__in=path[start:end])
    messages = list(rows) if start < end else []
    if byte_budget is not None:
        messages = _within_budget(messages, byte_budget, keep=target - start + 1 if target is not None else 1)
    return PathWindow(
        messages=messages,
        start=start,
        end=start + len(messages),
        total=total,
        on_active_path=on_active_path,
        at=at,
        around=around if target is not None else None,
        path=path,
        children_of=children_of,
    )


def _next_unanswered(conversation: Conversation, path: list[int] | None, *, after: int) -> int | None:
    """The first message on the path past position ``after`` with a tool call no message answers: one query, on the
    partial index of the conversation's unanswered calls."""
    calls = ToolCall.objects.filter(conversation=conversation, result_message__isnull=True, message__depth__gt=after)
    if path is None:
        return (
            calls.filter(message__on_active_path=True)
            .order_by("message__depth")
            .values_list("message_id", flat=True)
            .first()
        )
    on_path = set(path)
    found = calls.order_by("message__depth", "message_id").values_list("message_id", flat=True)
    return next((message_id for message_id in found if message_id in on_path), None)


def _siblings(conversation: Conversation, window: PathWindow) -> dict[int | None, list[int]]:
    """The children of every parent of the window's messages, by arrival: the skeleton's when it was read, else one
    query bounded by the window."""
    if window.children_of is not None:
        return window.children_of
    parents = {m.parent_id for m in window.messages}
    if not parents:
        return {}
    where = Q(parent_id__in=[p for p in parents if p is not None])
    if None in parents:
        where |= Q(parent__isnull=True)
    children_of: dict[int | None, list[int]] = defaultdict(list)
    for pk, parent_id in (
        Message.objects.filter(where, conversation=conversation).order_by("id").values_list("id", "parent_id")
    ):
        children_of[parent_id].append(pk)
    return children_of


class WindowOptions(TypedDict, total=False):
    """``path_window``'s choice of window, as another reader passes it on (each None or absent: its default)."""

    at: int | None
    after: int | None
    around: int | None
    unanswered_after: int | None
    limit: int | None
    byte_budget: int | None


def thread_read(conversation: Conversation, *, user: object, **options: Unpack[WindowOptions]) -> Thread:
    """A window of the thread (``path_window`` with ``options``; by default the whole path) and everything shown
    with it, in a fixed number of queries whatever the thread's size."""
    window = path_window(conversation, **options)
    items = {m.pk: ThreadMessage(message=m) for m in window.messages}
    children_of = _siblings(conversation, window)
    for item in items.values():
        siblings = children_of.get(item.message.parent_id, [])
        if len(siblings) > 1:
            index = siblings.index(item.message.pk)
            item.branch = BranchPoint(
                index=index + 1,
                count=len(siblings),
                previous_id=siblings[index - 1] if index > 0 else None,
                next_id=siblings[index + 1] if index + 1 < len(siblings) else None,
            )

    # The whole path by its flag (or its ids); a window by the ids it holds (at most WINDOW_LIMIT_MAX of them).
    ids = list(items)
    whole = window.is_whole

    def shown(prefix: str) -> Q:
        return window.on_path(prefix) if whole else Q(**{f"{prefix}id__in": ids})

    calls = list(
        ToolCall.objects.filter(conversation=conversation)
        .filter(shown("message__") | shown("result_message__"))
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

    artifacts = InjectedArtifact.objects.filter(shown("message__"))
    for artifact in artifacts.filter(conversation=conversation).order_by("id"):
        if artifact.tool_call_id in views:
            views[artifact.tool_call_id].artifacts.append(artifact)

    conversation_feedback: list[Feedback] = []
    own_conversation_feedback = None
    feedback = (
        Feedback.objects.filter(conversation=conversation)
        .filter(Q(message__isnull=True) | shown("message__"))
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
        messages=list(items.values()),
        conversation_feedback=conversation_feedback,
        own_conversation_feedback=own_conversation_feedback,
        labels=list(Label.objects.all()),
        window=window,
    )
