"""A conversation's thread as the review page shows it, in seven queries whatever the thread's size.

The conversation's tree skeleton (ids and parents only) is read once; the path to show and every branch point are
worked out from it in Python; then the messages of that path, their tool calls, injected artifacts and feedback
(with labels) are loaded in one query each.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from chats import rendering
from chats.models import Conversation, Feedback, InjectedArtifact, Label, Message, ToolCall


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


@dataclass(frozen=True)
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
