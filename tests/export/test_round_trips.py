"""Round trips through the exporters and the parsers.

Same format: parse, export in the format the document came in, and get the document back (up to the
normalisations `cases.comparable` documents). Cross format: parse in X, export in Y, parse Y, and get the same
messages, tool calls, artifacts and fields wherever CAPABILITIES says Y can hold them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from chats.export import CAPABILITIES, CAPABILITY_NAMES, active_path, export_conversation
from chats.ingest import detect_format, parse_document

from .cases import (
    artifacts_view,
    comparable,
    feedback_view,
    fields_view,
    format_pairs,
    input_cases,
    messages_view,
)

CASES = input_cases()
PAIRS = format_pairs(CASES)
TREE_PAIRS = [pair for pair in PAIRS if CAPABILITIES[pair.values[1]]["branches"]]
# Conversations with tool calls going into a tree format, which carries them outside its native fields.
TOOL_TREE_PAIRS = [
    pair
    for pair in TREE_PAIRS
    if any(m.tool_calls for m in parse_document(pair.values[2], format=pair.values[0]).messages)
]


@pytest.mark.parametrize("format", sorted(CAPABILITIES))
def test_every_format_says_whether_it_holds_each_capability(format: str) -> None:
    # omitted_notes reads every capability of the target: a missing one would fail an export, not a review.
    assert list(CAPABILITIES[format]) == list(CAPABILITY_NAMES)


@pytest.mark.parametrize(("format", "document"), CASES)
def test_exporting_in_the_format_a_conversation_came_in_gives_the_document_back(format: str, document: Any) -> None:
    conversation = parse_document(document, format=format)

    result = export_conversation(conversation, format)

    assert comparable(format, result.document) == comparable(format, document)
    assert result.omitted == []


# Only inputs that are themselves detected as their format: some are read as it only when the format is named.
DETECTED_CASES = [case for case in CASES if detect_format(case.values[1]) == case.values[0]]


def test_most_inputs_are_detected_as_their_own_format() -> None:
    assert len(DETECTED_CASES) > len(CASES) // 2


@pytest.mark.parametrize(("format", "document"), DETECTED_CASES)
def test_a_same_format_export_is_detected_as_that_format(format: str, document: Any) -> None:

    result = export_conversation(parse_document(document, format=format), format)

    assert detect_format(result.document) == format


@pytest.mark.parametrize(("source", "target", "document"), PAIRS)
def test_a_conversation_exported_in_another_format_reads_back_with_what_that_format_holds(
    source: str, target: str, document: Any
) -> None:
    conversation = parse_document(document, format=source)

    result = export_conversation(conversation, target)
    again = parse_document(result.document)

    assert again.format == target  # detected, not named
    assert messages_view(again, target) == messages_view(conversation, target)
    assert fields_view(again, target) == fields_view(conversation, target)
    assert feedback_view(again, target) == feedback_view(conversation, target)
    if CAPABILITIES[target]["artifacts"]:
        assert artifacts_view(again, target) == artifacts_view(conversation, target)
    if CAPABILITIES[target]["metadata"]:
        kept = {key: again.metadata.get(key) for key in conversation.metadata}
        clashing = next((note for note in result.omitted if note.startswith("top-level keys that clash")), "")
        assert {k: v for k, v in kept.items() if k not in clashing} == {
            k: v for k, v in conversation.metadata.items() if k not in clashing
        }


@pytest.mark.parametrize(("source", "target", "document"), TREE_PAIRS)
def test_a_tree_format_keeps_the_active_branch(source: str, target: str, document: Any) -> None:
    conversation = parse_document(document, format=source)

    again = parse_document(export_conversation(conversation, target).document)

    assert [m.key for m in active_path(again)] == [m.key for m in active_path(conversation)]


def test_tool_calls_go_into_the_tree_formats_from_every_format_that_has_them() -> None:
    sources = {(pair.values[0], pair.values[1]) for pair in TOOL_TREE_PAIRS}
    assert {target for _, target in sources} == {"chat_graph", "chatgpt_export", "openwebui"}
    assert {source for source, _ in sources} >= {"openai", "chat_document", "record_qa", "chat_graph", "chatgpt_export"}


@pytest.mark.parametrize(("source", "target", "document"), TOOL_TREE_PAIRS)
def test_a_tree_format_keeps_tool_calls_results_and_artifacts(source: str, target: str, document: Any) -> None:
    conversation = parse_document(document, format=source)

    result = export_conversation(conversation, target)
    again = parse_document(result.document)

    def calls(c: Any) -> dict[str, Any]:
        return {
            m.key: [(call.call_id, call.name, call.arguments) for call in m.tool_calls]
            for m in c.messages
            if m.tool_calls
        }

    def results(c: Any) -> dict[str, str]:
        return {m.key: m.tool_call_id for m in c.messages if m.tool_call_id}

    def artifacts(c: Any) -> list[tuple[str, str]]:
        return sorted((a.kind, a.artifact_id) for a in c.artifacts)

    assert calls(again) == calls(conversation)
    assert results(again) == results(conversation)
    assert artifacts(again) == artifacts(conversation)
    assert not any("tool calls" in note or "artifacts" in note or "reasoning" in note for note in result.omitted)


@pytest.mark.parametrize(("source", "target", "document"), PAIRS)
def test_a_linear_format_says_when_it_drops_branches(source: str, target: str, document: Any) -> None:
    conversation = parse_document(document, format=source)
    branched = len({m.parent_key for m in conversation.messages}) < len(conversation.messages)

    omitted = export_conversation(conversation, target).omitted

    says_so = any("not on the active path" in note for note in omitted)
    assert says_so == (branched and not CAPABILITIES[target]["branches"])


@pytest.mark.parametrize(("format", "document"), CASES)
def test_a_conversation_without_its_received_messages_exports_from_its_fields(format: str, document: Any) -> None:
    # Messages rebuilt from canonical fields (no `raw`) must still read back the same in their own format.
    conversation = parse_document(document, format=format)
    for message in conversation.messages:
        message.raw = None

    again = parse_document(export_conversation(conversation, format).document)

    assert again.format == format
    assert messages_view(again, format) == messages_view(conversation, format)
    assert feedback_view(again, format) == feedback_view(conversation, format)


@pytest.mark.parametrize(("source", "target", "document"), PAIRS)
def test_an_export_is_plain_json_and_the_same_every_time(source: str, target: str, document: Any) -> None:
    conversation = parse_document(document, format=source)

    first = json.dumps(export_conversation(conversation, target).document, ensure_ascii=False)
    second = json.dumps(export_conversation(conversation, target).document, ensure_ascii=False)

    assert first == second
