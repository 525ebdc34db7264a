"""Fuzzing the OpenAI message list parser (chats/ingest/openai.py): tool results linked to their calls by id (and
legacy function calls), loose ends kept as warnings; JSON inside strings decoded strictly. (Every entry point on any
JSON: tests/fuzz/test_parsers.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chats.formats.canonical import Conversation
from chats.ingest import openai
from tests.fuzz.parser_checks import PARSERS, exercise
from tests.fuzz.strategies import CALL_IDS, texts, tool_call


@pytest.mark.parametrize(
    "document",
    [
        [{"role": "assistant", "tool_calls": [tool_call("f", "[" * 100_000)]}],  # RecursionError
        [{"role": "assistant", "tool_calls": [tool_call("f", "1" * 5000)]}],  # over int's digit limit
        [{"role": "assistant", "tool_calls": [tool_call("f", '{"a": NaN}')]}],  # not storable as JSON
        [{"role": "assistant", "tool_calls": [tool_call("f", "[1e999]")]}],  # infinity
        [
            {"role": "assistant", "tool_calls": [tool_call("inject_airalogy_protocols", "{}")]},
            {"role": "tool", "tool_call_id": "c", "content": "[" * 100_000},
        ],
        [
            {"role": "assistant", "tool_calls": [tool_call("inject_airalogy_records", "{}")]},
            {"role": "tool", "tool_call_id": "c", "content": '[{"id": "r", "x": Infinity}]'},
        ],
    ],
    ids=[
        "deep-arguments",
        "long-integer-arguments",
        "nan-arguments",
        "infinite-arguments",
        "deep-result",
        "nan-result",
    ],
)
def test_json_inside_strings_is_decoded_strictly_and_never_raises(document: Any) -> None:
    exercise(document)
    conversation = openai.parse(document)

    assert conversation.messages[0].tool_calls[0].parsed_arguments in (None, {})
    assert all(artifact.payload is None for artifact in conversation.artifacts)


# --- tool results linked by id --------------------------------------------------------------------------------


@st.composite
def tool_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["call", "result", "legacy_call", "legacy_result", "text"]))
        if kind == "call":
            ids = draw(st.lists(st.sampled_from([*CALL_IDS, None]), min_size=1, max_size=3))
            calls = [tool_call("search", draw(st.sampled_from(["{}", "", "{", "[1e999]"]))) for _ in ids]
            for call, call_id in zip(calls, ids, strict=True):
                if call_id is None:
                    del call["id"]
                else:
                    call["id"] = call_id
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif kind == "result":
            result_call_id = draw(st.sampled_from([*CALL_IDS, "call_unknown", 7, ""]))
            messages.append({"role": "tool", "tool_call_id": result_call_id, "content": draw(texts)})
        elif kind == "legacy_call":
            messages.append({"role": "assistant", "function_call": {"name": "lookup", "arguments": "{}"}})
        elif kind == "legacy_result":
            messages.append({"role": "function", "name": draw(st.sampled_from(["lookup", "other"])), "content": "1"})
        else:
            messages.append({"role": "assistant", "content": draw(texts)})
    return messages


@PARSERS
@given(document=tool_conversations())
def test_tool_results_link_to_calls_by_id_and_loose_ends_are_warnings(document: list[dict[str, Any]]) -> None:
    outcome = exercise(document)["openai"]

    assert isinstance(outcome, Conversation), outcome
    calls = {call.call_id for message in outcome.messages for call in message.tool_calls}
    warnings = [(warning.path, warning.message) for warning in outcome.warnings]
    for index, raw in enumerate(document):
        call_id = raw.get("tool_call_id")
        if call_id not in (None, "") and str(call_id) not in calls:
            assert (f"/{index}", f"orphan result: tool_call_id '{call_id}' matches no call") in warnings
    answered = {message.tool_call_id for message in outcome.messages if message.tool_call_id}
    for message in outcome.messages:
        for call in message.tool_calls:
            if call.call_id not in answered:
                assert any(m == f"unanswered call: no result for '{call.call_id}'" for _, m in warnings)
