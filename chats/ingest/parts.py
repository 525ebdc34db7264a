"""Content parts: the canonical form of a message's content, read from what the formats send.

``content_parts`` and ``normalize_part`` read OpenAI-style content (a string, null, or a list of typed parts, plus
the untyped parts some providers send); ``content_object_parts`` reads ChatGPT's ``{content_type, ...}`` content
objects, which chat_graph copies. ``render_text`` gives the plain text of canonical parts. Everything here works on
decoded JSON and copies no value it does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chats.formats.canonical import Issues
from chats.ingest.common import pointer
from chats.json_types import JSONObject

# --- content parts ------------------------------------------------------------------------------------------


def content_parts(content: object, path: str, issues: Issues) -> list[JSONObject]:
    """Canonical parts of an OpenAI-style ``content``: a string, null, or a list of parts.

    An empty string gives no parts (the caller records that the content was a string).
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        issues.error(path, "content must be a string, null or a list of parts")
        return []
    parts = []
    for index, part in enumerate(content):
        converted = normalize_part(part)
        if converted is None:
            issues.error(pointer(path, index), "a content part must be an object or a string")
        else:
            parts.append(converted)
    return parts


def normalize_part(part: object) -> JSONObject | None:
    """One canonical part; None when the part is neither an object nor a string (the caller reports it)."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind is None:
        converted = _untyped_part(part)
    else:
        converter = _PART_CONVERTERS.get(kind) if isinstance(kind, str) else None
        converted = converter(part) if converter is not None else None
    return converted if converted is not None else {"type": "unknown", "raw": part}


def _text_part(part: JSONObject) -> JSONObject | None:
    text = part.get("text")
    return {"type": "text", "text": text} if isinstance(text, str) else None


def _image_part(value: object, detail: object = None) -> JSONObject | None:
    if isinstance(value, dict):
        detail = value.get("detail", detail)
        value = value.get("url")
    if not isinstance(value, str):
        return None
    image: JSONObject = {"type": "image", "url": value}
    if isinstance(detail, str):
        image["detail"] = detail
    return image


def _audio_part(value: object) -> JSONObject | None:
    if isinstance(value, str):
        # A URL or data URI has a scheme; bare base64 has no colon.
        return {"type": "audio", "url": value} if ":" in value else {"type": "audio", "data": value}
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("data"), str):
        audio = {"type": "audio", "data": value["data"]}
        if isinstance(value.get("format"), str):
            audio["format"] = value["format"]
        return audio
    if isinstance(value.get("url"), str):
        return {"type": "audio", "url": value["url"]}
    return None


def _file_part(value: object) -> JSONObject | None:
    if not isinstance(value, dict):
        return None
    fields = {key: value[key] for key in ("file_id", "file_data", "filename") if isinstance(value.get(key), str)}
    return {"type": "file", **fields} if fields else None


def _refusal_part(part: JSONObject) -> JSONObject | None:
    refusal = part.get("refusal")
    return {"type": "refusal", "refusal": refusal} if isinstance(refusal, str) else None


_PART_CONVERTERS: dict[str, Callable[[JSONObject], JSONObject | None]] = {
    "text": _text_part,
    "input_text": _text_part,  # the Responses API
    "output_text": _text_part,
    "image_url": lambda part: _image_part(part.get("image_url")),
    "input_image": lambda part: _image_part(part.get("image_url"), part.get("detail")),
    "input_audio": lambda part: _audio_part(part.get("input_audio")),
    "audio": lambda part: _audio_part(part.get("audio")),
    "audio_url": lambda part: _audio_part(part.get("audio_url")),
    "file": lambda part: _file_part(part.get("file")),
    "input_file": _file_part,
    "refusal": _refusal_part,
}


def _untyped_part(part: JSONObject) -> JSONObject | None:
    # Some providers (Qwen/DashScope among them) send {"text": ...}, {"image": ...}, {"audio": ...} parts.
    if "text" in part:
        return _text_part(part)
    if "image" in part:
        return _image_part(part["image"])
    if "audio" in part:
        return _audio_part(part["audio"])
    return None


def render_text(parts: list[dict[str, Any]]) -> str:
    """The plain text of the parts (text and refusals), one part per line."""
    texts = []
    for part in parts:
        kind = part["type"]
        if kind == "text":
            texts.append(part["text"])
        elif kind == "refusal":
            texts.append(part["refusal"])
    return "\n".join(texts)


# --- content objects (ChatGPT's, which chat_graph copies) ---------------------------------------------------


def content_object_parts(content: object, path: str, issues: Issues) -> tuple[list[JSONObject], str]:
    """(parts, reasoning) of a ``{content_type, parts | text | ...}`` content object; its ``content_type`` decides
    where the text is (``code`` and ``execution_output`` have ``text``, browsing displays a ``result``, ...)."""
    if content is None:
        return [], ""
    if not isinstance(content, dict):
        issues.error(path, "content must be an object")
        return [], ""
    content_type = content.get("content_type")
    if content_type == "thoughts":
        return [], _thoughts(content.get("thoughts"))
    reader = _CONTENT_READERS.get(content_type) if isinstance(content_type, str) else None
    if reader is None and isinstance(content.get("parts"), list):
        reader = _multimodal_parts  # an unknown content type with parts
    parts = reader(content, path, issues) if reader is not None else []
    if not parts and isinstance(content.get("text"), str):
        # Any type may put its text under `text` (an unknown type, a chat_graph {"content_type": "text", "text"}).
        parts = _joined_text(content["text"])
    elif reader is None:
        # An unknown content type with neither parts nor text: keep it whole.
        return [{"type": "unknown", "raw": content}], ""
    return parts, ""


def _joined_text(*pieces: object) -> list[JSONObject]:
    text = "\n".join(piece for piece in pieces if isinstance(piece, str) and piece)
    return [{"type": "text", "text": text}] if text else []


def _multimodal_parts(content: JSONObject, path: str, issues: Issues) -> list[JSONObject]:
    raw_parts = content.get("parts")
    if not isinstance(raw_parts, list):
        return []
    parts: list[JSONObject] = []
    for index, part in enumerate(raw_parts):
        if isinstance(part, str):
            if part:  # system and hidden messages often carry a single empty part
                parts.append({"type": "text", "text": part})
        elif isinstance(part, dict) and "content_type" in part:
            parts.append(_pointer_part(part))
        else:
            converted = normalize_part(part)
            if converted is None:
                issues.error(f"{path}/parts/{index}", "a content part must be an object or a string")
            else:
                parts.append(converted)
    return parts


def _pointer_part(part: JSONObject) -> JSONObject:
    kind = part["content_type"]
    asset = part.get("asset_pointer")
    if kind == "image_asset_pointer" and isinstance(asset, str):
        return {"type": "image", "url": asset}
    if kind == "audio_asset_pointer" and isinstance(asset, str):
        return {"type": "audio", "url": asset}
    if kind == "audio_transcription" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return {"type": "unknown", "raw": part}


def _thoughts(thoughts: object) -> str:
    if not isinstance(thoughts, list):
        return ""
    blocks = []
    for thought in thoughts:
        if isinstance(thought, dict):
            block = "\n".join(
                piece for piece in (thought.get("summary"), thought.get("content")) if isinstance(piece, str) and piece
            )
            if block:
                blocks.append(block)
    return "\n\n".join(blocks)


def _tether_quote(content: JSONObject) -> list[JSONObject]:
    title, url = content.get("title"), content.get("url")
    heading = f"{title} ({url})" if isinstance(title, str) and isinstance(url, str) else title or url
    return _joined_text(heading, content.get("text"))


def _system_error(content: JSONObject) -> list[JSONObject]:
    name, text = content.get("name"), content.get("text")
    return _joined_text(f"{name}: {text}" if isinstance(name, str) and isinstance(text, str) else name or text)


_CONTENT_READERS: dict[str, Callable[[JSONObject, str, Issues], list[JSONObject]]] = {
    "text": _multimodal_parts,
    "multimodal_text": _multimodal_parts,
    "code": lambda content, path, issues: _joined_text(content.get("text")),
    "execution_output": lambda content, path, issues: _joined_text(content.get("text")),
    "reasoning_recap": lambda content, path, issues: _joined_text(content.get("content")),
    "tether_browsing_display": lambda content, path, issues: _joined_text(
        content.get("result") or content.get("summary")
    ),
    "tether_quote": lambda content, path, issues: _tether_quote(content),
    "system_error": lambda content, path, issues: _system_error(content),
    "user_editable_context": lambda content, path, issues: _joined_text(
        content.get("user_profile"), content.get("user_instructions")
    ),
}
