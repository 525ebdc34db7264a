"""One conversation as a line of OpenAI chat fine-tuning JSONL.

The record is the active path as the model should learn it: reviewers' corrections replace the assistant text
they correct, hidden messages are left out, and reasoning never enters the training content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chats.formats.canonical import Conversation, Message, ToolCall
from chats.formats.openai_messages import openai_part, text_of

from .common import active_path

# Fine-tuning knows system, user, assistant and tool; older roles map onto them.
_TRAINING_ROLES = {"developer": "system", "function": "tool"}


def training_record(
    conversation: Conversation, *, corrections: Mapping[str, str], provenance: Mapping[str, object]
) -> dict[str, Any]:
    """`{"messages", "tools", "metadata"}` for one conversation.

    `corrections` maps a message key to the corrected text that replaces that message's content (its tool
    calls stay). `provenance` says where the line came from and becomes its `metadata`. `tools` declares every
    distinct function called, with an open parameter schema since the data holds calls, not declarations.
    """
    messages: list[dict[str, Any]] = []
    tool_names: list[str] = []
    for message in active_path(conversation):
        if message.hidden:
            continue
        messages.append(_training_message(message, corrections.get(message.key)))
        for call in message.tool_calls:
            if call.name not in tool_names:
                tool_names.append(call.name)
    record: dict[str, Any] = {"messages": messages}
    if tool_names:
        record["tools"] = [
            {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in tool_names
        ]
    record["metadata"] = dict(provenance)
    return record


def _training_message(message: Message, correction: str | None) -> dict[str, Any]:
    role = _TRAINING_ROLES.get(message.role, message.role)
    out: dict[str, Any] = {"role": role}
    if message.name and role != "tool":
        out["name"] = message.name
    out["content"] = correction if correction is not None else _training_content(message)
    if message.tool_calls:
        out["tool_calls"] = [_training_call(call) for call in message.tool_calls]
    if role == "tool" and message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def _training_content(message: Message) -> Any:
    """The answer without its reasoning: a string, or text and image parts when the message shows images.

    Audio, files and unknown parts cannot be trained on in the chat format, so they are left out.
    """
    if any(part.get("type") == "image" for part in message.parts):
        return [openai_part(part) for part in message.parts if part.get("type") in ("text", "image")]
    if message.content_is_null and not any(part.get("type") == "text" for part in message.parts):
        return None
    return text_of(message.parts)


def _training_call(call: ToolCall) -> dict[str, Any]:
    # Every call becomes a function call (a custom call's `input` as its arguments) to match `tools`.
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
