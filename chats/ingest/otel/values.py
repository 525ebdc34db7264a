"""Attribute values as the readers take them: counts, text, JSON held in text, indexed (flattened) attributes."""

from __future__ import annotations

import json
from typing import Any

from chats import strict_json
from chats.ingest.otel.decoding import json_int
from chats.storable import parsed_if_storable, unstorable


def json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


_INT64 = 2**63


def as_count(value: object) -> int | None:
    """A count (tokens): a non-negative integer that a 64-bit column holds, else None."""
    number: int | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        number = json_int(value)
    return number if number is not None and 0 <= number < _INT64 else None


def as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def json_attribute(value: object) -> Any:
    """An attribute that holds JSON text: its parsed value when storable, else the text as it came (None: absent)."""
    if isinstance(value, str):
        parsed = parsed_if_storable(value)
        return parsed if parsed is not None else value
    return value


def unstorable_json(text: str) -> str:
    """Why JSON text could not be read as a value to store (", it holds ..."), or "" when it is not JSON at all."""
    try:
        value = strict_json.loads(text)
    except ValueError:
        return ""
    found = unstorable(value)
    return f" (its JSON cannot be stored: {found.reason} at {found.pointer or '/'})" if found is not None else ""


def arguments_text(arguments: object) -> str:
    """Tool call arguments as the text OpenAI-style messages carry (an object is written as compact JSON)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as a list of ``{rest: value}`` objects, in the order of N."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index_text, _, rest = key[len(prefix) :].partition(".")
        if not (index_text.isascii() and index_text.isdigit()) or len(index_text) > 6 or not rest:
            continue
        groups.setdefault(int(index_text), {})[rest] = value
    return [groups[index] for index in sorted(groups)]
