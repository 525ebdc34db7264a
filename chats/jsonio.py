"""Strict JSON decoding: what PostgreSQL's jsonb can store, nothing more."""

from __future__ import annotations

import json
from typing import Any


class NotStrictJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON and which jsonb refuses.
    raise NotStrictJson(f"{name} is not a JSON value")


def loads(data: str | bytes) -> Any:
    """json.loads, refusing NaN/Infinity. Raises json.JSONDecodeError, UnicodeDecodeError or NotStrictJson."""
    return json.loads(data, parse_constant=_refuse_constant)
