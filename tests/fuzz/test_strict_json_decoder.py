"""Fuzzing the strict decoder every document goes through first (chats.strict_json.loads): any bytes decode to strict JSON
or a documented error, and whatever it decodes parses or fails with a ParseError. (Its item and line counters:
tests/test_strict_json.py.)"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from chats import strict_json
from tests.fuzz.parser_checks import PARSERS, exercise
from tests.fuzz.strategies import json_values

DOCUMENTED_DECODE_ERRORS = (json.JSONDecodeError, UnicodeDecodeError, strict_json.NotStrictJson)


def check_decoded(data: bytes | str) -> Any:
    """Decode strictly: a value that JSON can hold, or a documented error."""
    try:
        value = strict_json.loads(data)
    except DOCUMENTED_DECODE_ERRORS as error:
        assert str(error)
        return error
    text = json.dumps(value, allow_nan=False)  # no NaN, no infinity
    # Encoded again, it decodes the same (json's own reading, where "\\ud800\\udc00" is one character).
    assert strict_json.loads(text) == json.loads(text)
    return value


@PARSERS
@given(data=st.binary(max_size=200))
@example(data=b"[" * 100_000)  # RecursionError
@example(data=b"1" * 5000)  # ValueError: over int's digit limit
@example(data=b"1e999")  # decoded to infinity
@example(data=b'{"a": -1e400}')
@example(data=b"\xef\xbb\xbf{}")  # UTF-8 byte order mark
@example(data=b'"\\ud800"')
@example(data=b"\xff\xfe")
def test_any_bytes_decode_to_strict_json_or_a_documented_error(data: bytes) -> None:
    check_decoded(data)


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    """JSON texts (in the encodings json detects), then corrupted: truncated, spliced, with odd numbers."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    data = text.encode(draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"])), "surrogatepass")
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(data)))
        insert = draw(
            st.one_of(
                st.binary(max_size=4),
                st.sampled_from([b"NaN", b"-Infinity", b"1e999", b"1" * 4400, b"[" * 2000, b"\\ud800", b"\x00", b","]),
            )
        )
        cut = draw(st.integers(0, 3))
        data = data[:position] + insert + data[position + cut :]
    return data


@PARSERS
@given(data=json_texts())
def test_corrupted_json_texts_decode_to_strict_json_or_a_documented_error(data: bytes) -> None:
    outcome = check_decoded(data)

    if not isinstance(outcome, ValueError):
        exercise(outcome)


@PARSERS
@given(value=json_values)
def test_json_texts_decode_as_json_reads_them(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert strict_json.loads(text.encode("utf-8", "surrogatepass")) == json.loads(text)
