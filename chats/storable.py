"""The one boundary every stored value crosses: what PostgreSQL can keep in a text or jsonb column, checked once.

PostgreSQL refuses a NUL character in text and in jsonb, and no UTF-8 text can hold an unpaired UTF-16 surrogate
(which ``json.loads`` accepts as ``"\\ud800"``). A value nested deeper than ``MAX_DEPTH`` levels, or longer than its
field allows, is refused too, before any expensive work: deep values are what make recursive code (renderers,
diffs, the database's own jsonb functions) fail or slow down.

Every path that stores text or JSON a client sent calls `unstorable` (or `check`, which raises the domain's
`InvalidInput`): ingestion, team review, export jobs, rules, feedback and the admin's forms. The answer names the
JSON pointer of the first offending value, so a client can find it. The walk is iterative: no input can make it
recurse, and its time is linear in the value's size.

JSON held inside text (a tool call's ``arguments``, a Record QA payload) follows one rule, `parsed_if_storable`: the
text is kept exactly as received (the six characters ``\\u0000`` are storable text), and its parsed form is used
only when that form is storable itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from chats import strict_json
from chats.errors import InvalidInput
from chats.json_types import JSON

# Containers inside containers. A real document stays far below; the strict decoder (chats.strict_json) refuses what is
# much deeper, and every reader of stored JSON walks it without recursing, so a value this deep is stored whole.
MAX_DEPTH = 1024
MAX_TEXT_CHARS = 20_000_000  # one string; a body is bounded by MASTERBRAIN_MAX_BODY_BYTES before this


@dataclass(frozen=True)
class Unstorable:
    """Where (a JSON pointer) and why a value cannot be stored."""

    pointer: str
    reason: str

    def as_error(self) -> dict[str, str]:
        return {"path": self.pointer, "message": self.reason}


def pointer_token(token: object) -> str:
    """One reference token of a JSON pointer (RFC 6901), itself storable: what a key cannot hold is escaped."""
    shown = str(token).replace("\x00", "\\u0000").encode(errors="backslashreplace").decode()
    return shown.replace("~", "~0").replace("/", "~1")


def text_reason(text: str) -> str | None:
    """Why a string cannot be stored, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored; remove or escape it"
    try:
        text.encode()
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate (such as \\ud800), which is not text; send valid UTF-8"
    return None


def unstorable(
    value: object, pointer: str = "", *, max_depth: int = MAX_DEPTH, max_chars: int = MAX_TEXT_CHARS
) -> Unstorable | None:
    """The first value (in document order) that cannot be stored, with its pointer; None when all can.

    Strings and object keys are checked for NUL and unpaired surrogates and for length; containers for depth. Other
    JSON scalars (numbers, booleans, null) are always storable here: `chats.strict_json.loads` refuses the numbers that
    are not.
    """
    # A stack of (value, pointer, depth); children are pushed in reverse so that the first offender is reported.
    stack: list[tuple[object, str, int]] = [(value, pointer, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            found = _text_unstorable(item, path, max_chars)
            if found is not None:
                return found
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return Unstorable(path, f"is nested more than {max_depth} levels deep")
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    sub = f"{path}/{pointer_token(key)}"
                    if isinstance(key, str):
                        found = _text_unstorable(key, sub, max_chars, what="key")
                        if found is not None:
                            return found
                    children.append((child, sub, depth + 1))
                stack.extend(reversed(children))
            else:
                stack.extend((child, f"{path}/{index}", depth + 1) for index, child in reversed(list(enumerate(item))))
    return None


def _text_unstorable(text: str, path: str, max_chars: int, what: str = "") -> Unstorable | None:
    if len(text) > max_chars:
        return Unstorable(path, f"{what or 'text'} is longer than {max_chars} characters")
    reason = text_reason(text)
    if reason is None:
        return None
    return Unstorable(path, f"the key {reason}" if what == "key" else reason)


def check(value: object, field: str = "", **limits: int) -> None:
    """Raise `InvalidInput` naming the pointer (under ``field``, itself a JSON pointer such as ``/answers``) of the
    first value that cannot be stored."""
    found = unstorable(value, field, **limits)
    if found is not None:
        raise InvalidInput([found.as_error()])


def parsed_if_storable(text: str) -> JSON:
    """JSON held inside text (a tool call's arguments): its parsed value when it is valid strict JSON and storable
    as jsonb, else None. The text itself is kept as received either way; only its parsed form is dropped."""
    try:
        value = strict_json.loads(text)
    except ValueError:
        return None
    return None if unstorable(value) is not None else value
