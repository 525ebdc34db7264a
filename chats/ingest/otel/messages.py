"""Messages and their tool calls in each form, as OpenAI-style messages: the GenAI conventions' typed parts,
OpenInference's ``message.*`` and OpenLLMetry's flattened attributes."""

from __future__ import annotations

from typing import Any

from chats.ingest.otel.spans import SpanRead
from chats.ingest.otel.values import arguments_text, as_text, indexed, json_text
from chats.storable import parsed_if_storable

# --- form 1: the GenAI semantic conventions ---------------------------------------------------------------------


def genai_message(message: object, read: SpanRead, where: str) -> list[dict[str, Any]]:
    """OpenAI-style messages of one GenAI-conventions message (one per tool result part it holds)."""
    if not isinstance(message, dict):
        read.warnings.append(f"{where} is not a message object; left out")
        return []
    role = message.get("role")
    if not isinstance(role, str) or not role:
        read.warnings.append(f"{where} has no role; left out")
        return []
    parts = message.get("parts")
    extra = {key: value for key, value in message.items() if key not in ("role", "parts")}
    if not isinstance(parts, list):
        parts = [] if parts is None else [parts]
    results: list[dict[str, Any]] = []
    converted = genai_parts(parts, extra, read, where, results=results)
    messages = []
    if converted["content"] is not None or converted["tool_calls"] or converted["reasoning"] or not results:
        out: dict[str, Any] = {"role": role, "content": converted["content"]}
        if converted["tool_calls"]:
            out["tool_calls"] = converted["tool_calls"]
        if converted["reasoning"]:
            out["reasoning_content"] = converted["reasoning"]
        out.update(extra)
        messages.append(out)
    for result in results:
        messages.append({"role": "tool", **result})
    return messages


def genai_parts(
    parts: list[Any],
    extra: dict[str, Any],
    read: SpanRead,
    where: str,
    *,
    results: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """OpenAI-style content, tool calls and reasoning from typed parts; tool results are added to ``results``."""
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for part in parts:
        if isinstance(part, str):
            content.append({"type": "text", "text": part})
            continue
        if not isinstance(part, dict):
            read.warnings.append(f"{where}: a part that is not an object; kept verbatim")
            content.append({"type": "unknown_part", "value": part})
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            content.append({"type": "text", "text": part["content"]})
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            call: dict[str, Any] = {
                "id": as_text(part.get("id")),
                "type": "function",
                "function": {"name": part["name"], "arguments": arguments_text(part.get("arguments"))},
            }
            calls.append(call)
        elif kind == "tool_call_response" and results is not None:
            response = part.get("response", part.get("result"))
            results.append({"tool_call_id": as_text(part.get("id")), "content": _content_value(response)})
        elif kind == "reasoning" and isinstance(part.get("content"), str):
            reasoning.append(part["content"])
        elif kind in ("blob", "uri", "file"):
            content.append(_media_part(part))
        else:
            content.append(part)  # kept verbatim: an unknown part of the canonical form
    value: Any
    if not content:
        value = None
    elif len(content) == 1 and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
        value = content[0]["text"]
    else:
        value = content
    return {"content": value, "tool_calls": calls, "reasoning": "\n\n".join(reasoning)}


def _content_value(response: object) -> Any:
    """A tool result's content: text as it came, anything else as its JSON text."""
    if response is None:
        return ""
    return json_text(response)


def _media_part(part: dict[str, Any]) -> dict[str, Any]:
    """A blob, URI or file part of the GenAI conventions as an OpenAI-style part (the original when it is none)."""
    modality = part.get("modality")
    mime = as_text(part.get("mime_type"))
    kind = part.get("type")
    if kind == "uri" and isinstance(part.get("uri"), str):
        if modality == "image":
            return {"type": "image_url", "image_url": {"url": part["uri"]}}
        if modality == "audio":
            return {"type": "audio_url", "audio_url": part["uri"]}
    if kind == "blob" and isinstance(part.get("content"), str):
        if modality == "image":
            return {"type": "image_url", "image_url": {"url": f"data:{mime or 'image/*'};base64,{part['content']}"}}
        if modality == "audio":
            audio: dict[str, Any] = {"data": part["content"]}
            if mime.startswith("audio/"):
                audio["format"] = mime.removeprefix("audio/")
            return {"type": "input_audio", "input_audio": audio}
        return {"type": "file", "file": {"file_data": part["content"]}}
    if kind == "file" and isinstance(part.get("file_id"), str):
        return {"type": "file", "file": {"file_id": part["file_id"]}}
    return part


# --- flattened tool calls (OpenInference, OpenLLMetry) -----------------------------------------------------------


def _flat_tool_calls(flat: dict[str, Any], prefix: str, *, id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    """The OpenAI-style tool calls of a message written as flattened, indexed attributes (OpenInference's and
    OpenLLMetry's spellings differ only in the attribute names); a call without a name is left out."""
    calls = []
    for call in indexed(flat, prefix):
        called = call.get(name)
        if isinstance(called, str):
            calls.append(
                {
                    "id": as_text(call.get(id)),
                    "type": "function",
                    "function": {"name": called, "arguments": arguments_text(call.get(arguments))},
                }
            )
    return calls


def _role(flat: dict[str, Any], key: str, read: SpanRead, where: str) -> str | None:
    """A flattened message's role, under `key`; None, with a warning, when it has none (it is left out)."""
    role = flat.get(key)
    if not isinstance(role, str) or not role:
        read.warnings.append(f"{where}: a message without {key}; left out")
        return None
    return role


def _add_references(message: dict[str, Any], flat: dict[str, Any], prefix: str, calls: list[dict[str, Any]]) -> None:
    """Give `message` what ties it to other messages: its name and the id of the call it answers (non-empty text
    under `prefix`), and the tool `calls` it makes, when it makes some."""
    for key in ("name", "tool_call_id"):
        value = flat.get(f"{prefix}{key}")
        if isinstance(value, str) and value:
            message[key] = value
    if calls:
        message["tool_calls"] = calls


# --- form 2: OpenInference --------------------------------------------------------------------------------------


_OPENINFERENCE_KEYS = frozenset({"message.role", "message.content", "message.name", "message.tool_call_id"})


def openinference_message(flat: dict[str, Any], read: SpanRead, where: str) -> dict[str, Any] | None:
    role = _role(flat, "message.role", read, where)
    if role is None:
        return None
    message: dict[str, Any] = {"role": role}
    contents = indexed(flat, "message.contents.")
    if "message.content" in flat:
        message["content"] = as_text(flat["message.content"]) if flat["message.content"] is not None else None
    elif contents:
        parts: list[Any] = []
        for item in contents:
            kind = item.get("message_content.type")
            if kind == "text":
                parts.append({"type": "text", "text": as_text(item.get("message_content.text"))})
            elif kind == "image":
                parts.append(
                    {"type": "image_url", "image_url": {"url": as_text(item.get("message_content.image.image.url"))}}
                )
            else:
                parts.append({"type": "unknown_part", "value": item})
        message["content"] = parts
    else:
        message["content"] = None
    _add_references(
        message,
        flat,
        "message.",
        _flat_tool_calls(
            flat,
            "message.tool_calls.",
            id="tool_call.id",
            name="tool_call.function.name",
            arguments="tool_call.function.arguments",
        ),
    )
    known = ("message.contents.", "message.tool_calls.")
    other = {key: value for key, value in flat.items() if key not in _OPENINFERENCE_KEYS and not key.startswith(known)}
    if other:
        message["openinference"] = other
    return message


# --- form 3: OpenLLMetry ----------------------------------------------------------------------------------------


_OPENLLMETRY_KEYS = frozenset({"role", "content", "name", "tool_call_id"})


def openllmetry_message(flat: dict[str, Any], read: SpanRead, where: str) -> dict[str, Any] | None:
    role = _role(flat, "role", read, where)
    if role is None:
        return None
    content = flat.get("content")
    if isinstance(content, str) and content.startswith("[") and content.endswith("]"):
        parsed = parsed_if_storable(content)  # multimodal content is written as the JSON of its parts
        if isinstance(parsed, list) and all(isinstance(part, dict) and "type" in part for part in parsed):
            content = parsed
    message: dict[str, Any] = {"role": role, "content": content if isinstance(content, str | list) else None}
    _add_references(
        message, flat, "", _flat_tool_calls(flat, "tool_calls.", id="id", name="name", arguments="arguments")
    )
    other = {
        key: value for key, value in flat.items() if key not in _OPENLLMETRY_KEYS and not key.startswith("tool_calls.")
    }
    message.update({key: value for key, value in other.items() if key not in message})
    return message
