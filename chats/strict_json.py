"""Strict JSON decoding: what PostgreSQL's jsonb can store, nothing more; and counting the documents of a bulk
body (a JSON array, or NDJSON lines) without decoding them, so that a limit is checked before the expensive work."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import orjson


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


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dump_bytes(value: object) -> bytes:
    """A compact JSON text of a decoded value in UTF-8, for a JSON column written by COPY (the database parses it
    again, so only its meaning counts, not its spelling). orjson writes it several times faster than the standard
    library; what orjson refuses (an integer beyond 64 bits, a lone surrogate) takes the standard library's encoder.
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        # A lone surrogate has no UTF-8 form: the database refuses the bytes, as it refuses them in any column.
        return _compact(value).encode(errors="surrogatepass")


# --- counting without decoding ------------------------------------------------------------------------------

_WHITESPACE = re.compile(rb"[ \t\n\r]*")
_STRING = rb'"(?:[^"\\]++|\\.)*+"'
_ATOM = rb'[^"\[\]{}]++|' + _STRING  # bytes that open or close nothing: scalars, whitespace, commas, strings


def _shallow(height: int) -> bytes:
    """A container holding containers no deeper than ``height`` - 1 levels."""
    inside = _ATOM if height == 1 else _ATOM + rb"|" + _shallow(height - 1)
    return rb"[\[{](?:" + inside + rb")*+[\]}]"


# One step over a container's inside: a run that the regex engine skips whole (atoms, and containers at most three
# levels deep), then the run of openers or closers that ends it. Real documents take a Python iteration per few
# hundred bytes; the worst (containers four deep, or chains of "[1,") one per few bytes: linear either way. Every
# quantifier is possessive: no input makes the engine backtrack.
_SHALLOW = _shallow(3)
_NESTED_STEP = re.compile(
    rb"(?:" + _ATOM + rb"|" + _SHALLOW + rb")*+"
    rb"(?:(?P<open>(?:[\[{][ \t\n\r]*+)++)|(?P<close>(?:[\]}][ \t\n\r]*+)++))?",
    re.DOTALL,
)
# The same over an item of the array itself, stopping at the commas that separate the items.
_ITEM_RUN = re.compile(rb'(?:[^"\[\]{},]++|' + _STRING + rb"|" + _SHALLOW + rb")*+", re.DOTALL)
# Deeper than any JSON text json.loads decodes (it stops near Python's recursion limit): the decoder refuses it.
_MAX_DEPTH = 100_000
_COMMA, _QUOTE, _CLOSE_BRACKET, _CLOSE_BRACE = b",", b'"', b"]", b"}"
_WHITESPACE_BYTES = (b" ", b"\t", b"\n", b"\r")


def count_array_items(data: bytes, *, stop_after: int) -> int | None:
    """How many items the JSON array ``data`` holds, counted without decoding them; None when ``data`` is not an
    array (the decoder then says what it is).

    One pass over the bytes, skipping strings and their escapes and following the nesting, in time linear in the
    size and constant memory. It stops as soon as the count passes ``stop_after`` and returns that count. A
    malformed array (or one nested too deeply to decode) is counted up to where it breaks, and the decoder
    reports the fault.
    """
    encoding = json.detect_encoding(data)
    if encoding not in ("utf-8", "utf-8-sig"):
        try:  # UTF-16 or UTF-32, which json.loads also reads: the same text in UTF-8
            data = data.decode(encoding).encode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
    items = _array_items(data, 3 if encoding == "utf-8-sig" else 0)
    if items is None:
        return None
    count = 0
    for _ in items:
        count += 1
        if count > stop_after:
            break
    return count


def array_item_spans(data: bytes, *, stop_after: int) -> list[tuple[int, int]] | None:
    """Where each item of the JSON array ``data`` lies in it, as (start, end) byte offsets, found without decoding
    (as ``count_array_items`` counts them, and stopping as it does): the bytes each document of a bulk body was
    received as. None when ``data`` is not an array, or not UTF-8 (a UTF-16 body's items have no bytes of their
    own in UTF-8)."""
    encoding = json.detect_encoding(data)
    if encoding not in ("utf-8", "utf-8-sig"):
        return None
    items = _array_items(data, 3 if encoding == "utf-8-sig" else 0)
    if items is None:
        return None
    spans: list[tuple[int, int]] = []
    for span in items:
        spans.append(span)
        if len(spans) > stop_after:
            break
    return spans


def _array_items(data: bytes, position: int) -> Iterator[tuple[int, int]] | None:
    """The (start, end) of each item of the array that opens at ``position`` (after whitespace); None when no
    array opens there."""
    position = _skip_whitespace(data, position)
    if data[position : position + 1] != b"[":
        return None
    return _items_after(data, position + 1)


def _items_after(data: bytes, position: int) -> Iterator[tuple[int, int]]:
    while True:
        position = _skip_whitespace(data, position)
        byte = data[position : position + 1]
        if byte in (b"", _CLOSE_BRACKET):
            return
        if byte == _COMMA:  # an empty slot ("[1,,2]"): not an item
            position += 1
            continue
        start = position
        position = _skip_item(data, position)
        end = position
        while end > start and data[end - 1 : end] in _WHITESPACE_BYTES:
            end -= 1
        yield start, end
        if data[position : position + 1] == _COMMA:
            position += 1


def _skip_whitespace(data: bytes, position: int) -> int:
    match = _WHITESPACE.match(data, position)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _skip_item(data: bytes, position: int) -> int:
    """The position of the comma or bracket that ends the item at ``position`` (len(data) when nothing does)."""
    end = len(data)
    while True:
        run = _ITEM_RUN.match(data, position)
        assert run is not None  # the pattern matches the empty string
        position = run.end()
        byte = data[position : position + 1]
        if byte in (b"", _QUOTE):  # the end, or a string that never ends
            return end
        if byte in (_COMMA, _CLOSE_BRACKET):
            return position
        if byte == _CLOSE_BRACE:  # a stray brace: malformed, left to the decoder
            position += 1
            continue
        position = _skip_container(data, position + 1)


def _skip_container(data: bytes, position: int) -> int:
    """The position just after the container whose opening bracket is just before ``position``; len(data)
    when it never closes."""
    end = len(data)
    depth = 1
    while True:
        step = _NESTED_STEP.match(data, position)
        assert step is not None  # the pattern matches the empty string
        start, position = step.span("open")
        if start >= 0:
            depth += data.count(b"[", start, position) + data.count(b"{", start, position)
            if depth > _MAX_DEPTH:
                return end
            continue
        start, position = step.span("close")
        if start < 0:  # the end, or a string that never ends
            return end
        closers = data.count(b"]", start, position) + data.count(b"}", start, position)
        if closers < depth:
            depth -= closers
            continue
        # This container closes inside the run: after its depth-th closer.
        for index in range(start, position):
            if data[index] in b"]}":
                depth -= 1
                if not depth:
                    return index + 1


_NOT_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def count_lines(data: bytes, *, stop_after: int) -> int:
    """How many lines of ``data`` hold something other than whitespace (NDJSON documents), split as
    ``bytes.splitlines()`` splits them; counted in linear time without copying a line, stopping as soon as the
    count passes ``stop_after``.

    Line breaks are found with bytes.find (a memchr) rather than a regular expression; the next newline and the next
    carriage return are each looked for once and kept until a line passes them, so that a body of one kind of
    break alone is not scanned to its end again for the other at every line."""
    count = 0
    position = 0
    newline = carriage_return = 0  # the next of each at or after `position`; -1: none left
    while count <= stop_after:
        found = _NOT_BLANK.search(data, position)
        if found is None:
            break
        count += 1
        start = found.end()
        if 0 <= newline < start:
            newline = data.find(b"\n", start)
        if 0 <= carriage_return < start:
            carriage_return = data.find(b"\r", start)
        ends = [end for end in (newline, carriage_return) if end >= 0]
        if not ends:
            break
        position = min(ends) + 1
    return count
