"""Helpers shared by the format parsers: issues, JSON pointers, timestamps, content parts, tool arguments.

Everything here works on decoded JSON (dicts, lists, strings, numbers) and copies no value it does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chats import jsonio
from chats.ingest.canonical import Conversation, Issue, ParseError


class Issues:
    """The warnings and errors found while parsing one document."""

    __slots__ = ("errors", "warnings")

    def __init__(self) -> None:
        self.warnings: list[Issue] = []
        self.errors: list[Issue] = []

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(Issue(path, message))

    def error(self, path: str, message: str) -> None:
        self.errors.append(Issue(path, message))

    def raise_errors(self) -> None:
        if self.errors:
            raise ParseError(self.errors)


def pointer(base: str, *tokens: str | int) -> str:
    """Extend the JSON pointer ``base`` (RFC 6901) with ``tokens``, escaping ``~`` and ``/`` in keys."""
    for token in tokens:
        if isinstance(token, str) and ("~" in token or "/" in token):
            token = token.replace("~", "~0").replace("/", "~1")
        base = f"{base}/{token}"
    return base


def shape_error(format_name: str, expects: str) -> ParseError:
    return ParseError([Issue("", f"format '{format_name}' expects {expects}")])


def parse_nested(prefix: str, parse: Callable[[], Conversation]) -> Conversation:
    """Run ``parse`` on a document found at ``prefix`` inside the one received (``/0`` of a one-item array, the
    ``/chat_graph`` of a wrapper), so that every error, warning and message path points into what was received."""
    try:
        conversation = parse()
    except ParseError as error:
        raise ParseError([Issue(f"{prefix}{issue.path}", issue.message) for issue in error.errors]) from None
    conversation.warnings = [Issue(f"{prefix}{issue.path}", issue.message) for issue in conversation.warnings]
    for message in conversation.messages:
        message.source_path = f"{prefix}{message.source_path}"
    return conversation


def parse_export_item(document: Any, parse: Callable[[Any], Conversation], *, export: str, items: str) -> Conversation:
    """One conversation, sent alone or as the one item of an export array (a whole export of several goes through
    the bulk path; in an array every path points under ``/0``). `export` and `items` name the export and what it
    holds, for the error."""
    if not isinstance(document, list):
        return parse(document)
    if len(document) != 1:
        raise ParseError([Issue("", f"this {export} holds {len(document)} {items}: import it in bulk")])
    return parse_nested("/0", lambda: parse(document[0]))


def message_author(body: dict[str, Any], path: str, issues: Issues) -> tuple[dict[str, Any], str] | None:
    """A ChatGPT-style message's ``author`` object ({} when it is not one) and role; None, with an error at
    `path`/author/role, when it has no role."""
    author = body.get("author")
    if not isinstance(author, dict):
        author = {}
    role = author.get("role")
    if not isinstance(role, str) or not role:
        issues.error(f"{path}/author/role", "a message needs a role (a non-empty string)")
        return None
    return author, role


def unmapped_keys(document: dict[str, Any], mapped: frozenset[str]) -> dict[str, Any]:
    """The top-level keys that no field of the canonical form holds, verbatim."""
    return {key: value for key, value in document.items() if key not in mapped}


def require_messages(messages: list[Any], path: str) -> None:
    if not messages:
        raise ParseError([Issue(path, "the conversation has no messages")])


# --- scalar fields ------------------------------------------------------------------------------------------


def optional_text(value: Any, path: str, issues: Issues) -> str | None:
    """A string field some producers send as a number: the text, "" when absent, None when unusable."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    issues.warn(path, "expected a string; the value is kept in metadata")
    return None


def external_id(value: Any, path: str, issues: Issues) -> str | None:
    """A conversation id: a string, or a number read as its decimal text. Anything else is an error."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    issues.error(path, "the conversation id must be a non-empty string")
    return None


# The keys a conversation id is found under, in order of preference (design notes §3, rule 1).
ID_KEYS = ("chat_id", "conversation_id", "id", "thread_id")


def explicit_id(document: dict[str, Any], issues: Issues) -> str | None:
    """The conversation id a document carries under the first of ID_KEYS it has (None when it has none).

    A format maps its own id key; an id found under another key also stays in metadata, verbatim, so that an
    export gives it back under the key it came with.
    """
    for key in ID_KEYS:
        if document.get(key) is not None:
            return external_id(document[key], f"/{key}", issues)
    return None


def parse_timestamp(value: Any, path: str, issues: Issues) -> datetime | None:
    """An aware UTC datetime from ISO 8601 text, epoch seconds (number or numeric string), or None.

    Naive ISO text is read as UTC with a warning (some producers write local time without an offset). A value
    that is none of these gives a warning and None: a bad timestamp never rejects a conversation.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    if isinstance(value, int | float):
        return _from_epoch(value, path, issues)
    if not isinstance(value, str):
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    text = value.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return _from_epoch(number, path, issues)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    if moment.tzinfo is None:
        issues.warn(path, f"timestamp {value!r} has no UTC offset; read as UTC")
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before the first representable UTC moment
        issues.warn(path, f"timestamp out of range: {value!r}")
        return None


def original_times(document: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The document's times under ``keys`` exactly as written (offset, naive form, precision and type), so that
    an export can give them back: the stored instants are in UTC."""
    return {key: document[key] for key in keys if document.get(key) is not None}


def _from_epoch(seconds: float, path: str, issues: Issues) -> datetime | None:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        issues.warn(path, f"epoch timestamp out of range: {seconds!r}")
        return None


# --- content parts ------------------------------------------------------------------------------------------


def content_parts(content: Any, path: str, issues: Issues) -> list[dict[str, Any]]:
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


def normalize_part(part: Any) -> dict[str, Any] | None:
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


def _text_part(part: dict[str, Any]) -> dict[str, Any] | None:
    text = part.get("text")
    return {"type": "text", "text": text} if isinstance(text, str) else None


def _image_part(value: Any, detail: Any = None) -> dict[str, Any] | None:
    if isinstance(value, dict):
        detail = value.get("detail", detail)
        value = value.get("url")
    if not isinstance(value, str):
        return None
    image: dict[str, Any] = {"type": "image", "url": value}
    if isinstance(detail, str):
        image["detail"] = detail
    return image


def _audio_part(value: Any) -> dict[str, Any] | None:
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


def _file_part(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    fields = {key: value[key] for key in ("file_id", "file_data", "filename") if isinstance(value.get(key), str)}
    return {"type": "file", **fields} if fields else None


def _refusal_part(part: dict[str, Any]) -> dict[str, Any] | None:
    refusal = part.get("refusal")
    return {"type": "refusal", "refusal": refusal} if isinstance(refusal, str) else None


_PART_CONVERTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
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


def _untyped_part(part: dict[str, Any]) -> dict[str, Any] | None:
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


def content_object_parts(content: Any, path: str, issues: Issues) -> tuple[list[dict[str, Any]], str]:
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


def _joined_text(*pieces: Any) -> list[dict[str, Any]]:
    text = "\n".join(piece for piece in pieces if isinstance(piece, str) and piece)
    return [{"type": "text", "text": text}] if text else []


def _multimodal_parts(content: dict[str, Any], path: str, issues: Issues) -> list[dict[str, Any]]:
    raw_parts = content.get("parts")
    if not isinstance(raw_parts, list):
        return []
    parts: list[dict[str, Any]] = []
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


def _pointer_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["content_type"]
    asset = part.get("asset_pointer")
    if kind == "image_asset_pointer" and isinstance(asset, str):
        return {"type": "image", "url": asset}
    if kind == "audio_asset_pointer" and isinstance(asset, str):
        return {"type": "audio", "url": asset}
    if kind == "audio_transcription" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return {"type": "unknown", "raw": part}


def _thoughts(thoughts: Any) -> str:
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


def _tether_quote(content: dict[str, Any]) -> list[dict[str, Any]]:
    title, url = content.get("title"), content.get("url")
    heading = f"{title} ({url})" if isinstance(title, str) and isinstance(url, str) else title or url
    return _joined_text(heading, content.get("text"))


def _system_error(content: dict[str, Any]) -> list[dict[str, Any]]:
    name, text = content.get("name"), content.get("text")
    return _joined_text(f"{name}: {text}" if isinstance(name, str) and isinstance(text, str) else name or text)


_CONTENT_READERS: dict[str, Callable[[dict[str, Any], str, Issues], list[dict[str, Any]]]] = {
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


# --- inline reasoning ---------------------------------------------------------------------------------------

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


def split_think(text: str) -> tuple[str, str]:
    """Split inline ``<think>...</think>`` reasoning from an answer: (answer, reasoning).

    Also handles a closing tag without an opening one (chat templates that put ``<think>`` in the prompt) and
    an opening tag that is never closed (a reply cut off while thinking). Linear in the text: each tag is found
    once with str.find (a lazy regex rescans the rest of the text after every unclosed ``<think>``).
    """
    if "think>" not in text:
        return text, ""
    reasoning: list[str] = []
    # Whole blocks first, left to right: each <think> with the first </think> after it.
    pieces: list[str] = []
    position = 0
    while True:
        start = text.find(_THINK_OPEN, position)
        if start < 0:
            break
        end = text.find(_THINK_CLOSE, start + len(_THINK_OPEN))
        if end < 0:  # no block starts here, nor at any later <think>
            break
        pieces.append(text[position:start])
        reasoning.append(text[start + len(_THINK_OPEN) : end].strip())
        position = end + len(_THINK_CLOSE)
    pieces.append(text[position:])
    # What is left may join into new tags ("</thi<think>x</think>nk>"): they are read like any other.
    answer = "".join(pieces)
    closing = answer.find(_THINK_CLOSE)
    if closing >= 0:
        # Reasoning before a closing tag whose opening tag was in the prompt.
        reasoning.insert(0, answer[:closing].strip())
        answer = answer[closing + len(_THINK_CLOSE) :]
    opening = answer.find(_THINK_OPEN)
    if opening >= 0:
        # Reasoning cut off before its closing tag.
        reasoning.append(answer[opening + len(_THINK_OPEN) :].strip())
        answer = answer[:opening]
    return answer.strip(), "\n\n".join(block for block in reasoning if block)


def extract_inline_reasoning(
    parts: list[dict[str, Any]],
    *,
    marker: str = "think>",
    split: Callable[[str], tuple[str, str]] = split_think,
) -> tuple[list[dict[str, Any]], str]:
    """The parts with inline reasoning removed from their text, and the reasoning found: ``<think>`` blocks by
    default, or the blocks that `split` takes out of a text holding `marker`.

    Parts that held only reasoning are dropped; the original text stays in the message's ``raw``.
    """
    reasoning: list[str] = []
    kept: list[dict[str, Any]] = []
    for part in parts:
        if part["type"] != "text" or marker not in part["text"]:
            kept.append(part)
            continue
        answer, thought = split(part["text"])
        if thought:
            reasoning.append(thought)
        if answer:
            kept.append({"type": "text", "text": answer})
    return kept, "\n\n".join(reasoning)


# --- tool arguments and context pairs -----------------------------------------------------------------------


def parse_arguments(arguments: str) -> tuple[Any, str]:
    """(parsed value, error): the decoded JSON, or the decoder's message. Empty arguments are no error."""
    if not arguments or arguments.isspace():
        return None, ""
    try:
        # Strict: the decoded arguments are stored as JSON, which holds no NaN or infinity.
        return jsonio.loads(arguments), ""
    except ValueError as exc:
        return None, str(exc)


def context_pairs(value: Any, path: str, issues: Issues) -> list[list[str]] | None:
    """``value`` when it is a list of ``[str, str]`` pairs; else a warning and None (keep it verbatim)."""
    if not isinstance(value, list):
        issues.warn(path, "context must be a list of [string, string] pairs; kept verbatim")
        return None
    for index, pair in enumerate(value):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], str)):
            issues.warn(pointer(path, index), "a context pair must be two strings; the context is kept verbatim")
            return None
    return value


# --- trees --------------------------------------------------------------------------------------------------


def parents_first(parent_of: dict[str, str | None]) -> tuple[list[str], list[str]]:
    """Order tree nodes so that each comes after its parent, otherwise keeping the given order.

    ``parent_of`` maps every node to its parent (None for a root; every parent must be a node). Returns the
    ordered nodes and the nodes that never reach a root: they are in, or under, a cycle.
    """
    ordered: list[str] = []
    placed: set[str] = set()
    waiting: dict[str, list[str]] = {}  # parent -> children seen before it was placed
    for node, parent in parent_of.items():
        if parent is not None and parent not in placed:
            waiting.setdefault(parent, []).append(node)
            continue
        stack = [node]
        while stack:
            current = stack.pop()
            ordered.append(current)
            placed.add(current)
            children = waiting.pop(current, None)
            if children:
                stack.extend(reversed(children))
    return ordered, [node for node in parent_of if node not in placed]
