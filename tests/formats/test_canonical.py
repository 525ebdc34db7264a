"""A message's content key is the SHA-256 of its canonical JSON (sorted keys, no whitespace, unicode kept), whichever
encoder writes that text: keys of stored conversations never change with the code that computes them."""

from __future__ import annotations

import hashlib
import json

import hypothesis
from hypothesis import given
from hypothesis import strategies as st

from chats.formats.canonical import Message, ToolCall, own_digest
from chats.ingest import parse_document


def _canonical_digest(message: Message) -> bytes:
    """The definition, written out with the standard library alone."""
    calls = [[call.type, call.name, call.arguments] for call in message.tool_calls]
    text = json.dumps(
        [message.role, message.name, message.parts, message.reasoning, calls],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(text.encode(errors="surrogatepass")).digest()


# Any text, lone surrogates and control characters included.
TEXT = st.text(st.characters(codec=None, blacklist_categories=()), max_size=40)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
PART_VALUE = TEXT | JSON_SCALARS | st.lists(JSON_SCALARS, max_size=3)


@hypothesis.settings(max_examples=400, deadline=None)
@given(
    role=TEXT,
    name=TEXT,
    reasoning=TEXT,
    parts=st.lists(st.dictionaries(TEXT, PART_VALUE, max_size=4), max_size=4),
    calls=st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=3),
)
def test_the_digest_is_that_of_the_canonical_json_whatever_the_values(role, name, reasoning, parts, calls):
    message = Message(key="", role=role, name=name, reasoning=reasoning, parts=parts)
    message.tool_calls = [ToolCall(call_id=f"c{i}", type=t, name=n, arguments=a) for i, (t, n, a) in enumerate(calls)]
    assert own_digest(message) == _canonical_digest(message)


def test_numbers_in_parts_are_written_as_the_standard_library_writes_them():
    # 1e-07 and 2.5e-05 are spelt 1e-7 and 0.000025 by other encoders: a different key for the same message.
    content = [{"type": "x-sensor", "reading": 1e-07}, {"type": "x-sensor", "reading": 2.5e-05}]
    [message] = parse_document([{"role": "user", "content": content}]).messages
    assert message.parts[0]["type"] == "unknown"
    assert own_digest(message) == _canonical_digest(message)
