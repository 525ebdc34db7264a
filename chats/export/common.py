"""Pieces every exporter shares: the active path, branch notes, messages as received, metadata, times.

OpenAI-style parts, messages and tool calls built from the canonical fields are in chats.formats.openai_messages.

Pure functions over the canonical dataclasses; no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chats.formats.canonical import ID_KEYS, Conversation, Issues, Message
from chats.formats.chat_graph import WRAPPER_KEY as GRAPH_WRAPPER_KEY
from chats.formats.openai_messages import OPENAI_MESSAGE_FORMATS
from chats.formats.times import parse_timestamp


@dataclass(slots=True)
class ExportResult:
    """An exported document, ready for `json.dumps`, and what the target format could not hold.

    The document shares objects with the conversation (messages go out as received): serialise it, do not
    mutate it.
    """

    document: Any
    omitted: list[str] = field(default_factory=list)


# --- the tree ---


def active_path(conversation: Conversation) -> list[Message]:
    """The messages from the root to the active leaf, in order.

    The active leaf is ``active_leaf_key``, or the last message when it is unset or names no message (a stale
    key must not make an export empty).
    """
    if not conversation.messages:
        return []
    by_key = {message.key: message for message in conversation.messages}
    leaf = by_key.get(conversation.active_leaf_key or "", conversation.messages[-1])
    path: list[Message] = []
    seen: set[str] = set()
    current: Message | None = leaf
    # `seen` guards against a parent cycle in hand-built or corrupted data; parsers never produce one.
    while current is not None and current.key not in seen:
        path.append(current)
        seen.add(current.key)
        current = by_key.get(current.parent_key) if current.parent_key is not None else None
    path.reverse()
    return path


def off_path_note(conversation: Conversation, path: list[Message]) -> str | None:
    """How much of the tree a linear export leaves out, or None when the conversation is a single chain."""
    on_path = {message.key for message in path}
    dropped = [message for message in conversation.messages if message.key not in on_path]
    if not dropped:
        return None
    # A branch is a subtree hanging off the path: an off-path message whose parent is on the path (or a root).
    branches = sum(1 for m in dropped if m.parent_key is None or m.parent_key in on_path)
    branch_word = "branch" if branches == 1 else "branches"
    message_word = "message" if len(dropped) == 1 else "messages"
    return f"{branches} {branch_word} ({len(dropped)} {message_word}) not on the active path"


def children_by_parent(messages: Iterable[Message]) -> dict[str | None, list[str]]:
    """Child keys of every message (and of None, for the roots), in message order."""
    children: dict[str | None, list[str]] = {}
    for message in messages:
        children.setdefault(message.parent_key, []).append(message.key)
    return children


# --- messages as received ---


def goes_out_raw(conversation: Conversation, message: Message, target: str) -> bool:
    """Whether the message is exported exactly as received, rather than rebuilt from its canonical fields.

    It is whenever the target's messages have the shape of the input's, so that nothing the client sent is lost.
    """
    if not isinstance(message.raw, dict):
        return False
    source = conversation.format
    return source == target or (source in OPENAI_MESSAGE_FORMATS and target in OPENAI_MESSAGE_FORMATS)


# Top-level keys a format defines (or that would make its document look like another format): a conversation's
# verbatim metadata never overwrites them.
_DETECTION_KEYS = frozenset(
    {"messages", "history", "main_messages", "chat_history", "nodes", "mapping", "current_node", "context"}
)


def graph_wrapper(conversation: Conversation) -> dict[str, Any] | None:
    """For a chat_graph received wrapped (`{"chat_graph": {conversation_id, nodes, ...}, ...}`), the graph's own
    other keys, which its parser leaves under the wrapper key in the metadata; None for any other conversation."""
    if conversation.format != "chat_graph":
        return None
    wrapper = conversation.metadata.get(GRAPH_WRAPPER_KEY)
    return wrapper if isinstance(wrapper, dict) else None


def top_level_metadata(conversation: Conversation) -> dict[str, Any]:
    """The conversation's other top-level keys as an unwrapped document would have them: for a wrapped chat_graph,
    the wrapper's other keys and the graph's own (the wrapper key itself is the format's, not data)."""
    wrapper = graph_wrapper(conversation)
    if wrapper is None:
        return conversation.metadata
    keys = {key: value for key, value in conversation.metadata.items() if key != GRAPH_WRAPPER_KEY}
    for key, value in wrapper.items():
        keys.setdefault(key, value)
    return keys


def spill_metadata(conversation: Conversation, document: dict[str, Any], target: str) -> list[str]:
    """Copy the conversation's other top-level keys into `document`; note those the format reserves.

    Keys that came with a document of the same format coexisted with its own keys, so they all go back; keys
    from another format must not look like the target's (or another format's) own keys.
    """
    reserved = set(document) if conversation.format == target else set(document) | _DETECTION_KEYS
    clashing: list[str] = []
    for key, value in top_level_metadata(conversation).items():
        if key in reserved:
            clashing.append(key)
        else:
            document[key] = value
    if clashing:
        return [f"top-level keys that clash with the format: {', '.join(sorted(clashing))}"]
    return []


def keeps_message_extra(conversation: Conversation) -> bool:
    """Whether the unknown keys of the conversation's messages belong in another format's messages.

    A ChatGPT message's other fields (`status`, `end_turn`, `metadata` with citations and model slugs) are
    that product's internals, not something a client sent about the message: other formats leave them out.
    """
    return conversation.format != "chatgpt_export"


def chatgpt_fields_note(conversation: Conversation, exported: list[Message], target: str) -> list[str]:
    if target == "chatgpt_export" or keeps_message_extra(conversation):
        return []
    keys = sorted({key for m in exported if not goes_out_raw(conversation, m, target) for key in m.extra})
    return [f"ChatGPT message fields: {', '.join(keys)}"] if keys else []


# --- times ---


def document_time(conversation: Conversation, key: str, stored: datetime, render: Callable[[datetime], Any]) -> Any:
    """The time to write under `key`: as the input wrote it there when that still names the stored instant (so
    its offset, naive form and precision come back), else `render(stored)`. The database keeps only the instant,
    in UTC."""
    if key in conversation.original_times:
        original = conversation.original_times[key]
        if parse_timestamp(original, "", Issues()) == stored:
            return original
    return render(stored)


def put_times(
    document: dict[str, Any], conversation: Conversation, keys: tuple[str, str], render: Callable[[datetime], Any]
) -> None:
    """Write the conversation's start and end time, those it has, under the format's `keys` (start, end), each as
    `document_time` gives it."""
    for key, moment in zip(keys, (conversation.started_at, conversation.ended_at), strict=True):
        if moment is not None:
            document[key] = document_time(conversation, key, moment, render)


def iso_time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def epoch_seconds(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def id_key_needed(conversation: Conversation) -> bool:
    """Whether a format's own id key must carry the conversation id: not when the id came under another key,
    which the metadata gives back (`{"id": ..., "messages": [...]}` exports as it came)."""
    if not conversation.external_id:
        return False
    return not any(conversation.metadata.get(key) == conversation.external_id for key in ID_KEYS)
