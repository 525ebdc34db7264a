"""Helpers shared by the format parsers: JSON pointers, ids, timestamps, inline reasoning, tool arguments, trees.

Everything here works on decoded JSON (dicts, lists, strings, numbers) and copies no value it does not change.
The reading of message content into canonical parts lives in chats.ingest.parts; `Issues` (the warnings and
errors found) in chats.formats.canonical, and the reading of timestamps in chats.formats.times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chats import storable, strict_json
from chats.formats.canonical import ID_KEYS, Conversation, Issue, Issues, ParseError
from chats.json_types import JSON, JSONMapping, JSONObject


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


def parse_export_item[T](
    document: T | list[T], parse: Callable[[T], Conversation], *, export: str, items: str
) -> Conversation:
    """One conversation, sent alone or as the one item of an export array (a whole export of several goes through
    the bulk path; in an array every path points under ``/0``). `export` and `items` name the export and what it
    holds, for the error."""
    if not isinstance(document, list):
        return parse(document)
    if len(document) != 1:
        raise ParseError([Issue("", f"this {export} holds {len(document)} {items}: import it in bulk")])
    return parse_nested("/0", lambda: parse(document[0]))


def message_author(body: JSONMapping, path: str, issues: Issues) -> tuple[JSONObject, str] | None:
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


def unmapped_keys(document: JSONMapping, mapped: frozenset[str]) -> JSONObject:
    """The top-level keys that no field of the canonical form holds, verbatim."""
    return {key: value for key, value in document.items() if key not in mapped}


def require_messages(messages: Sequence[object], path: str) -> None:
    if not messages:
        raise ParseError([Issue(path, "the conversation has no messages")])


# --- scalar fields ------------------------------------------------------------------------------------------


def optional_text(value: object, path: str, issues: Issues) -> str | None:
    """A string field some producers send as a number: the text, "" when absent, None when unusable."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    issues.warn(path, "expected a string; the value is kept in metadata")
    return None


def external_id(value: object, path: str, issues: Issues) -> str | None:
    """A conversation id: a string, or a number read as its decimal text. Anything else is an error."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    issues.error(path, "the conversation id must be a non-empty string")
    return None


def explicit_id(document: JSONMapping, issues: Issues) -> str | None:
    """The conversation id a document carries under the first of ID_KEYS it has (None when it has none).

    A format maps its own id key; an id found under another key also stays in metadata, verbatim, so that an
    export gives it back under the key it came with.
    """
    for key in ID_KEYS:
        if document.get(key) is not None:
            return external_id(document[key], f"/{key}", issues)
    return None


def original_times(document: JSONMapping, keys: tuple[str, ...]) -> JSONObject:
    """The document's times under ``keys`` exactly as written (offset, naive form, precision and type), so that
    an export can give them back: the stored instants are in UTC."""
    return {key: document[key] for key in keys if document.get(key) is not None}


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


def json_in_text(text: str) -> tuple[JSON, str, str]:
    """JSON held inside text (a tool call's arguments, an injection's result), by the one rule of
    `chats.storable.parsed_if_storable`: the text is kept as received, and its decoded value is used only when it
    is storable. (value, not JSON, not storable): the decoded value, or None with the decoder's message when the
    text is not JSON, or with why the decoded value cannot be stored (a NUL or an unpaired surrogate written as an
    escape, nesting too deep)."""
    value = storable.parsed_if_storable(text)
    if value is not None:
        return value, "", ""
    # Only when the text is not used (or is JSON null): say why.
    try:
        decoded = strict_json.loads(text)
    except ValueError as exc:
        return None, str(exc), ""
    found = storable.unstorable(decoded)
    if found is None:
        return None, "", ""  # null
    return None, "", f"the decoded value cannot be stored (at '{found.pointer}': {found.reason})"


def parse_arguments(arguments: str) -> tuple[JSON, str, str]:
    """(parsed value, error, warning) of a tool call's arguments: the decoded JSON (when it is storable, see
    `json_in_text`), why they are not JSON, and what to warn. Empty arguments are no error. Arguments that are
    valid JSON whose decoded value cannot be stored are kept as text only, and their error says why."""
    if not arguments or arguments.isspace():
        return None, "", ""
    value, error, unstored = json_in_text(arguments)
    if unstored:
        message = f"valid JSON, but {unstored}; kept as text only"
        return None, message, f"arguments are {message}"
    return value, error, f"arguments are not valid JSON: {error}" if error else ""


def context_pairs(value: object, path: str, issues: Issues) -> list[list[str]] | None:
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
