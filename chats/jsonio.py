"""Strict JSON decoding: what PostgreSQL's jsonb can store, nothing more."""

from __future__ import annotations

import json
import math
import sys
from typing import Any


class NotStrictJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON and which jsonb refuses.
    raise NotStrictJson(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    # A number beyond a double's range (1e999) would decode to infinity, which no JSON text can hold.
    value = float(text)
    if math.isinf(value):
        raise NotStrictJson(f"the number {text[:40]} is out of range")
    return value


def loads(data: str | bytes) -> Any:
    """json.loads, refusing NaN/Infinity, numbers beyond a double's range, integers too long to convert and
    nesting too deep to decode. Raises json.JSONDecodeError, UnicodeDecodeError or NotStrictJson (all ValueErrors).
    """
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (json.JSONDecodeError, UnicodeDecodeError, NotStrictJson):
        raise
    except RecursionError:
        raise NotStrictJson("the document is nested too deeply") from None
    except ValueError:
        # The one other failure: an integer longer than Python converts.
        raise NotStrictJson(f"a number has more than {sys.get_int_max_str_digits()} digits") from None
