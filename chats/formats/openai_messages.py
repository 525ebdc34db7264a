"""OpenAI chat messages built from the canonical fields: parts, content, tool calls, whole messages.

The exporters write every format whose messages are OpenAI-style with these; the ingest planner asks
`rebuilds_as_received` whether a message needs its copy as received stored beside it. Pure functions over the
canonical dataclasses; no Django.
"""

from __future__ import annotations

from typing import Any

import orjson

from chats.formats.canonical import Message, ToolCall

LEGACY_CALL_TYPE = "function_call"
CUSTOM_CALL_TYPE = "custom"
# A ChatGPT message addressed to a tool (`recipient: "python"`) is read as a call of this type.
RECIPIENT_CALL_TYPE = "recipient"

# Formats whose messages are OpenAI chat messages (chat_history's may also carry `context` pairs), so a message
# received in one is valid as-is in another.
OPENAI_MESSAGE_FORMATS = frozenset({"openai", "chat_document", "record_qa", "chat_history"})


# OpenAI-style keys that the messages of formats with no place of their own for them (a chat_graph node's message,
# an Open WebUI message) may carry.
OPENAI_STYLE_KEYS = frozenset({"name", "tool_calls", "function_call", "tool_call_id", "refusal", "reasoning_content"})


def rebuilds_as_received(message: Message, conversation_format: str) -> bool:
    """Whether the message needs no copy of itself as received: every export that would give back that copy
    (`chats.export.common.goes_out_raw`) gives back exactly the same message rebuilt from its canonical fields.

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
