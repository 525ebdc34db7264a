"""The counters that check the bulk endpoint's item limit in the bytes (chats.strict_json) count exactly what the decoder
would find. (The endpoint's side: tests/api/test_ingest_limits.py; the strict decoder is fuzzed in
tests/fuzz/test_strict_json_decoder.py.)"""

from __future__ import annotations

import json

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chats import strict_json

# --- counting an array -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (b"[]", 0),
        (b" \n[ \t]\r\n", 0),
        (b"[1]", 1),
        (b'[1, "two", null, true, 5.5e3]', 5),
        (b'["a,b", "[", "]", "{", "}", ","]', 6),
        (b'["\\"", "\\\\", "\\\\\\"", "x\\",y"]', 4),
        (b'[{"a": [1, [2, 3]], "b": {"c": ","}}, [[[[]]]], {}]', 3),
        (b'[[1,2],[3,[4,[5,[6,[7]]]]],{"k":{"k":{"k":{"k":[]}}}}]', 3),
        ('["é,", "日本,語", "\\u00e9"]'.encode(), 3),
        (b"\xef\xbb\xbf[1, 2]", 2),  # a UTF-8 byte order mark, which json.loads accepts
        ('[1, "a,b", [2]]'.encode("utf-16"), 3),  # UTF-16, which json.loads accepts too
    ],
)
def test_array_items_are_counted_as_the_decoder_sees_them(body, count):
    assert strict_json.count_array_items(body, stop_after=100) == count
    if count:
        assert count == len(json.loads(body))


@pytest.mark.parametrize("body", [b"{}", b'{"a": [1, 2]}', b'"[1, 2]"', b"12", b"", b"  ", b"null", b"\xff\xfe\xfd"])
def test_a_body_that_is_not_an_array_has_no_count(body):
    assert strict_json.count_array_items(body, stop_after=100) is None


def test_counting_stops_just_past_the_limit():
    assert strict_json.count_array_items(b"[1, 2, 3, 4, 5" + b", 6" * 1000, stop_after=2) == 3


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (b'[1, "never closed', 2),
        (b"[[1, 2], [3", 2),
        (b"[1,,2]", 2),
        (b"[1, 2,]", 2),
        (b"[" * 200_000, 1),  # deeper than any decoder goes: counted as one, which the decoder refuses
    ],
)
def test_a_malformed_array_is_counted_up_to_where_it_breaks(body, count):
    assert strict_json.count_array_items(body, stop_after=100) == count


JSON_TEXT = st.text(alphabet=st.sampled_from('",[]{}\\:/ \n\tabé\u2028')) | st.text()
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | JSON_TEXT,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(JSON_TEXT, children, max_size=5),
    max_leaves=30,
)
DUMPS_OPTIONS = st.sampled_from(
    [{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (",", ":")}, {"indent": "\t", "ensure_ascii": False}]
)


@hypothesis.settings(max_examples=300, deadline=None)
@given(array=st.lists(JSON_VALUES, max_size=12), options=DUMPS_OPTIONS)
def test_any_json_array_is_counted_exactly(array, options):
    body = json.dumps(array, **options).encode()

    assert strict_json.count_array_items(body, stop_after=10**9) == len(array)
    assert strict_json.count_array_items(body, stop_after=3) == min(len(array), 4)


# --- counting NDJSON lines -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (b"", 0),
        (b"\n\r\n\r", 0),
        (b" \t\x0b\x0c\n", 0),
        (b"{}", 1),
        (b"{}\n{}\n", 2),
        (b"{}\r{}\r\n{}", 3),
        (b"  {}  \n\n\t\n x", 2),
    ],
)
def test_lines_are_counted_as_the_endpoint_splits_them(body, count):
    assert strict_json.count_lines(body, stop_after=100) == count


def test_counting_lines_stops_just_past_the_limit():
    assert strict_json.count_lines(b"x\n" * 1_000_000, stop_after=5) == 6


@hypothesis.settings(max_examples=300, deadline=None)
@given(
    body=st.binary()
    | st.lists(st.sampled_from([b"{}", b" ", b"\n", b"\r", b"\r\n", b"\t", b"\x0b", b"x"])).map(b"".join)
)
def test_any_body_has_as_many_lines_as_splitlines_finds(body):
    assert strict_json.count_lines(body, stop_after=10**9) == len([line for line in body.splitlines() if line.strip()])
