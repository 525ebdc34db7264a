"""The one integer parser for everything a client types: query strings, form fields, path segments.

``str.isdigit()`` is true for ``"²"``, ``"①"`` and ``"፩"``, which ``int()`` refuses, and ``int()`` accepts
fullwidth digits (``"\\uff11\\uff12"``), ``" 12 "`` and ``"1_000"``. A client's integer is ASCII digits with an optional minus
sign and nothing else, inside a range, or it is not an integer: every path calls `parse_int` (or `require_int`).
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from rest_framework import serializers

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


class IntegerFormField(forms.IntegerField):
    """Django's `forms.IntegerField` read through `parse_int`: ASCII digits inside a bigint, and inside the field's
    own bounds (``min_value``/``max_value``, checked by its validators as before). Django's own accepts fullwidth
    digits, ``"1_000"``, ``"12.0"`` and integers no column can hold."""

    default_error_messages = {"invalid": "Enter a whole number in ASCII digits."}

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        number = parse_int(value)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class IntegerSerializerField(serializers.IntegerField):
    """DRF's `IntegerField` read through `parse_int`: a JSON integer, or a string of ASCII digits (a query
    parameter), inside a bigint and the field's bounds. DRF's own accepts fullwidth digits and ``12.0``."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and len(data) > self.MAX_STRING_LENGTH:
            self.fail("max_string_length")
        number = parse_int(data)
        if number is None:
            self.fail("invalid")
        return number
