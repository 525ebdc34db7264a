"""Fuzzing every parser entry point: whatever JSON arrives, the only failure is a ParseError that points into the
document, and whatever parses satisfies the promises of ``chats/formats/canonical.py``.

Entry points: the seven formats' ``parse``, ``detect_format``, ``parse_document`` (detected, and with a format name
that does not exist), ``apply_message_feedback`` (ChatGPT's thumbs), and ``strict_json.loads``
(the strict decoder every document goes through first, from bytes).

Documents come from three kinds of strategy: arbitrary JSON values; near-valid documents (the real-shaped fixtures
of each format with fields mutated: wrong types, missing and extra keys, huge and negative numbers, odd unicode
with lone surrogates and NUL, deep nesting, ids copied elsewhere); and structures built to break links (cycles,
duplicate and dangling ids in trees, results answering unknown calls), checked against an independent oracle.

The parsers take what ``strict_json.loads`` returns, so generated values stay within what it can return: integers of
at most 4,300 digits, no NaN or infinity, nesting within the decoder's depth.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from chats import ingest, strict_json
from chats.formats.canonical import FORMATS, Conversation
from tests.fuzz.parser_checks import MODULES, PARSERS, exercise
from tests.fuzz.strategies import SEEDS, json_values, mutated

# Each is called by exercise() or a test of its own (here, in tests/fuzz/test_<format>_parser.py and in
# tests/fuzz/test_strict_json_decoder.py); the last test keeps this list complete.
FUZZED_ENTRY_POINTS = {
    "openai.parse",
    "chat_document.parse",
    "record_qa.parse",
    "chat_history.parse",
    "chat_graph.parse",
    "chatgpt_export.parse",
    "openwebui.parse",
    "detect_format",
    "parse_document",
    "apply_message_feedback",
    "strict_json.loads",
}


# --- arbitrary JSON -------------------------------------------------------------------------------------------


@PARSERS
@given(document=json_values)
@example(document=[{"role": "user", "content": "\ud800"}])  # chain_key could not encode a lone surrogate
@example(document={"main_messages": [{"role": "user", "content": "x"}], "human_feedback": [{"score": []}]})
@example(document={"main_messages": [{"role": "user", "content": "x"}], "start_time": "0001-01-01T00:00:00+01:00"})
@example(document=[{"mapping": {"n": {"message": {"author": {}}}}}])  # errors of a one-item conversations.json
@example(document={"mapping": {"": {"message": {"author": {"role": "user"}}}}})  # "" would be a message's key
def test_arbitrary_json_gives_a_conversation_or_a_parse_error_from_every_entry_point(document: Any) -> None:
    exercise(document)


# --- near-valid documents of each format ----------------------------------------------------------------------

# Drawn as JSON text (ASCII, escapes for odd characters): a failing example prints flat, however deep it is.
NEAR_VALID = {format_name: mutated(SEEDS[format_name]).map(json.dumps) for format_name in FORMATS}


@pytest.mark.parametrize("format_name", FORMATS)
@PARSERS
@given(data=st.data())
def test_near_valid_documents_give_a_conversation_or_a_parse_error_that_points_into_them(
    format_name: str, data: st.DataObject
) -> None:
    document = json.loads(data.draw(NEAR_VALID[format_name], label="document"))

    outcomes = exercise(document)

    # How near to valid the documents are: see `pytest --hypothesis-show-statistics`.
    event("parsed" if isinstance(outcomes[format_name], Conversation) else "refused")


# --- decoding, then parsing -----------------------------------------------------------------------------------

NESTING_TEMPLATES = [
    '{"chat_history": [{"role": "user", "content": "x", "deep": %s}]}',
    '[{"role": "user", "content": [{"type": "weird", "value": %s}]}]',
    '{"main_messages": [{"role": "user", "content": "x"}], "start_time": %s, "human_feedback": [{"score": %s}]}',
    '{"nodes": [{"node_id": "n", "message": {"author": {"role": "user", "metadata": %s}}}]}',
    '{"mapping": {"n": {"message": {"author": {"role": "user"}, "content": %s}}}}',
    '{"chat": {"history": {"messages": {"m": {"role": "assistant", "content": "x", "annotation": %s}}}}}',
    # The linear copy is compared with the active branch: nested as deep as the decoder goes, on both sides.
    '[{"chat": {"history": {"messages": {"m": {"role": "user", "x": %s}}}, "messages": [{"role": "user", "x": %s}]}}]',
    "%s",
]


@PARSERS
@given(
    template=st.sampled_from(NESTING_TEMPLATES),
    depth=st.integers(0, 3000),
    kind=st.sampled_from(["list", "dict"]),
)
@example(template=NESTING_TEMPLATES[0], depth=1490, kind="list")
@example(template=NESTING_TEMPLATES[5], depth=100_000, kind="list")
def test_whatever_the_decoder_accepts_parses_or_fails_with_a_parse_error(template: str, depth: int, kind: str) -> None:
    nested = ("[" * depth + "1" + "]" * depth) if kind == "list" else ('{"k":' * depth + "1" + "}" * depth)
    text = template.replace("%s", nested)
    try:
        document = strict_json.loads(text)
    except strict_json.NotStrictJson as error:
        assert "nested too deeply" in str(error)
        return

    exercise(document)


def test_every_parser_entry_point_is_fuzzed() -> None:
    dispatch = {
        name
        for name, value in vars(ingest).items()
        if inspect.isfunction(value) and value.__module__ == ingest.__name__ and not name.startswith("_")
    }
    entry_points = {f"{name}.parse" for name in MODULES} | dispatch | {"apply_message_feedback", "strict_json.loads"}

    assert entry_points == FUZZED_ENTRY_POINTS
