"""The one integer parser for everything a client types: query strings, form fields, path segments.

``str.isdigit()`` is true for ``"²"``, ``"①"`` and ``"፩"``, which ``int()`` refuses, and ``int()`` accepts
fullwidth digits (``"\\uff11\\uff12"``), ``" 12 "`` and ``"1_000"``. A client's integer is ASCII digits with an optional minus
sign and nothing else, inside a range, or it is not an integer: every path calls `parse_int` (or `require_int`); forms through
`chats.form_fields.IntegerFormField`, serializers through `chats.api.fields.IntegerSerializerField`. This module
knows nothing of Django, so the pure packages (`chats.review`, `chats.ingest`) use it too.
"""

from __future__ import annotations

import re

from chats.errors import InvalidInput

_ASCII_INTEGER = re.compile(r"-?[0-9]{1,18}")  # 18 digits: inside a bigint, so never a conversion error

BIGINT_MAX = 2**63 - 1


def parse_int(text: object, *, minimum: int = -BIGINT_MAX, maximum: int = BIGINT_MAX) -> int | None:
    """The integer ``text`` spells in ASCII digits, inside [minimum, maximum]; None for anything else."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        value = text
    elif isinstance(text, str) and _ASCII_INTEGER.fullmatch(text):
        value = int(text)
    else:
        return None
    return value if minimum <= value <= maximum else None


def require_int(text: object, *, name: str, minimum: int = -BIGINT_MAX, maximum: int = BIGINT_MAX) -> int:
    """`parse_int`, raising `InvalidInput` that names the parameter (a JSON pointer or a query parameter)."""
    value = parse_int(text, minimum=minimum, maximum=maximum)
    if value is None:
        if minimum > -BIGINT_MAX and maximum < BIGINT_MAX:
            expected = f"an integer from {minimum} to {maximum}"
        elif minimum > -BIGINT_MAX:
            expected = f"an integer of at least {minimum}"
        else:
            expected = "an integer"
        raise InvalidInput([{"path": name, "message": f"must be {expected} in ASCII digits"}])
    return value
