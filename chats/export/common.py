"""Pieces every exporter shares: the active path, branch notes, OpenAI-style parts, messages and tool calls.

Pure functions over the canonical dataclasses; no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from chats.ingest.canonical import Conversation, Message, ToolCall
from chats.ingest.chat_graph import WRAPPER_KEY as GRAPH_WRAPPER_KEY
from chats.ingest.common import ID_KEYS, Issues, parse_timestamp

LEGACY_CALL_TYPE = "function_call"
CUSTOM_CALL_TYPE = "custom"
# A ChatGPT message addressed to a tool (`recipient: "python"`) is read as a call of this type.
RECIPIENT_CALL_TYPE = "recipient"


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

# Formats whose messages are OpenAI chat messages (chat_history's may also carry `context` pairs), so a message
# received in one is valid as-is in another.
OPENAI_MESSAGE_FORMATS = frozenset({"openai", "chat_document", "record_qa", "chat_history"})


def goes_out_raw(conversation: Conversation, message: Message, target: str) -> bool:
    """Whether the message is exported exactly as received, rather than rebuilt from its canonical fields.

    It is whenever the target's messages have the shape of the input's, so that nothing the client sent is lost.
    """
    if not isinstance(message.raw, dict):
        return False
    source = conversation.format
    return source == target or (source in OPENAI_MESSAGE_FORMATS and target in OPENAI_MESSAGE_FORMATS)


def rebuilds_as_received(message: Message, conversation_format: str) -> bool:
    """Whether the message needs no copy of itself as received: every export that would give back that copy
    (`goes_out_raw`) gives back exactly the same message rebuilt from its canonical fields.

    So it is for a message of a conversation in a format of OpenAI messages that carries no context pairs: the
    exporters rebuild its messages with `openai_message` with these options whatever the target (only a
    chat_history target adds context pairs, and it has none), and the rebuilt message must spell the same JSON
    as the one received (keys in any order, as PostgreSQL's jsonb keeps them; 1 and 1.0 and true told apart).
    """
    if conversation_format not in OPENAI_MESSAGE_FORMATS or message.context_pairs or not isinstance(message.raw, dict):
        return False
    rebuilt = openai_message(message, keep_extra=True)
    try:
        return orjson.dumps(rebuilt, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            message.raw, option=orjson.OPT_SORT_KEYS
        )
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, a lone surrogate: kept as received
        return False


# --- parts ---


def openai_part(part: dict[str, Any]) -> Any:
    """A canonical part as an OpenAI chat content part (an unknown part goes back exactly as received)."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image":
        image: dict[str, Any] = {"url": part.get("url", "")}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "audio":
        audio = {key: value for key, value in part.items() if key != "type"}
        return {"type": "input_audio", "input_audio": audio}
    if kind == "file":
        file = {key: value for key, value in part.items() if key != "type"}
        return {"type": "file", "file": file}
    if kind == "refusal":
        return {"type": "refusal", "refusal": part.get("refusal", "")}
    if kind == "unknown":
        return part.get("raw")
    # A part type this module does not know yet: keep it rather than lose it.
    return dict(part)


def text_of(parts: list[dict[str, Any]]) -> str:
    """The text parts, one per line (as the parsers render them), for content that must be one string."""
    return "\n".join(str(part.get("text", "")) for part in parts if part.get("type") == "text")


def openai_content(message: Message, *, single_text_as_string: bool = False) -> Any:
    """The `content` value of an OpenAI-style message: a string, None, or a list of parts.

    A string stays a string; `single_text_as_string` also makes one text part a string, for messages from
    formats where content is always a list of parts (a plain answer then reads as one). Outside a list, a
    refusal is not content: it travels in the message's own `refusal` key (`openai_message`).
    """
    parts = message.parts
    if message.content_is_null or message.content_is_string:
        parts = [part for part in parts if part.get("type") != "refusal"]
    if message.content_is_null and not parts:
        return None
    as_string = message.content_is_string or single_text_as_string
    if as_string and len(parts) <= 1 and all(part.get("type") == "text" for part in parts):
        return text_of(parts)
    return [openai_part(part) for part in parts]


def refusal_text(message: Message) -> str:
    """The refusal that travels beside a string or null `content` ("" when none)."""
    if not (message.content_is_null or message.content_is_string):
        return ""
    return "".join(str(part.get("refusal", "")) for part in message.parts if part.get("type") == "refusal")


# --- tool calls ---


def openai_tool_call(call: ToolCall) -> dict[str, Any]:
    """A tool call in the `tool_calls` style; a custom call keeps its `custom: {name, input}` form."""
    if call.type == CUSTOM_CALL_TYPE:
        body: dict[str, Any] = {
            "id": call.call_id,
            "type": CUSTOM_CALL_TYPE,
            "custom": {"name": call.name, "input": call.arguments},
        }
    else:
        # Calls that were not `tool_calls` entries where they came from become plain function calls.
        native = call.type not in (LEGACY_CALL_TYPE, RECIPIENT_CALL_TYPE)
        body = {
            "id": call.call_id,
            "type": call.type if native else "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
    # Unknown keys of the call object (for example a streaming `index`) go back as they came.
    for key, value in call.extra.items():
        body.setdefault(key, value)
    return body


def legacy_call(message: Message) -> ToolCall | None:
    """The message's legacy `function_call`, which travels as its own key rather than in `tool_calls`."""
    for call in message.tool_calls:
        if call.type == LEGACY_CALL_TYPE:
            return call
    return None


def modern_calls(message: Message) -> list[ToolCall]:
    return [call for call in message.tool_calls if call.type != LEGACY_CALL_TYPE]


# --- messages ---


def openai_message(
    message: Message,
    *,
    context_key: str | None = None,
    single_text_as_string: bool = False,
    keep_extra: bool = True,
) -> dict[str, Any]:
    """The message as an OpenAI chat message, built from its canonical fields.

    `context_key` names the key the context pairs travel under in formats that have one (chat_history).
    With `keep_extra`, the message's unknown keys follow verbatim, never overwriting a canonical field: so
    nothing a client sent is lost, and a key another format could only keep as unknown (a chat_graph node's
    `tool_calls`) comes back to life in a format that knows it.
    """
    out: dict[str, Any] = {"role": message.role}
    if message.name:
        out["name"] = message.name
    out["content"] = openai_content(message, single_text_as_string=single_text_as_string)
    refusal = refusal_text(message)
    if refusal:
        out["refusal"] = refusal
    calls = modern_calls(message)
    if calls:
        out["tool_calls"] = [openai_tool_call(call) for call in calls]
    legacy = legacy_call(message)
    if legacy is not None:
        out["function_call"] = {"name": legacy.name, "arguments": legacy.arguments}
    if message.tool_call_id and not message.tool_call_id.startswith(f"{LEGACY_CALL_TYPE}:"):
        # A legacy `function` answer is matched by name; its synthetic call id is not part of the format.
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning:
        out["reasoning_content"] = message.reasoning
    if context_key and message.context_pairs:
        out[context_key] = [list(pair) for pair in message.context_pairs]
    if keep_extra:
        for key, value in message.extra.items():
            out.setdefault(key, value)
    return out


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
