"""The training JSONL record: the active path in OpenAI fine-tuning format, with reviewers' corrections."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chats.export import training_record
from chats.ingest import parse_document
from tests.factories.exports import branched_conversation, call, injection_conversation, tool_conversation

from .cases import input_cases

PROVENANCE = {"source": "masterbrain", "external_id": "airalogy.id.chat.0001", "feedback_ids": [7]}


def test_training_record_is_the_active_path_in_openai_fine_tuning_format() -> None:
    record = training_record(tool_conversation(), corrections={}, provenance=PROVENANCE)

    assert record == {
        "messages": [
            {"role": "system", "content": "Be precise."},
            {"role": "user", "content": "Why are there nonspecific PCR bands?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "airalogy_search", "arguments": '{"keywords":["PCR"]}'},
                    }
                ],
            },
            {"role": "tool", "content": '{"search_result":"primer dimers"}', "tool_call_id": "call_abc123"},
            {"role": "assistant", "content": "Possibly primer dimers."},
        ],
        "tools": [
            {"type": "function", "function": {"name": "airalogy_search", "parameters": {"type": "object"}}},
        ],
        "metadata": PROVENANCE,
    }


def test_reasoning_never_enters_the_training_content() -> None:
    record = training_record(tool_conversation(), corrections={}, provenance={})

    assert "I should search first." not in json.dumps(record)


def test_a_correction_replaces_the_assistant_text_and_keeps_its_tool_calls() -> None:
    record = training_record(
        tool_conversation(),
        corrections={"m5": "Nonspecific bands usually mean primer dimers.", "m3": "Let me search."},
        provenance={},
    )

    assert record["messages"][4] == {
        "role": "assistant",
        "content": "Nonspecific bands usually mean primer dimers.",
    }
    assert record["messages"][2]["content"] == "Let me search."
    assert record["messages"][2]["tool_calls"][0]["id"] == "call_abc123"


def test_tools_declare_every_distinct_function_called_once_in_first_call_order() -> None:
    conversation = injection_conversation()
    conversation.messages[1].tool_calls.append(call("call_2", "airalogy_search", "{}"))
    conversation.messages[3].tool_calls.append(call("call_3", "inject_airalogy_protocols", "{}"))

    record = training_record(conversation, corrections={}, provenance={})

    assert [tool["function"]["name"] for tool in record["tools"]] == [
        "inject_airalogy_protocols",
        "airalogy_search",
    ]


def test_a_conversation_without_calls_has_no_tools_key() -> None:
    record = training_record(branched_conversation(), corrections={}, provenance={})

    assert "tools" not in record


def test_hidden_messages_are_skipped_and_scenario_messages_kept_in_order() -> None:
    conversation = tool_conversation()
    conversation.messages[0].section = "scenario"
    conversation.messages[1].hidden = True

    record = training_record(conversation, corrections={}, provenance={})

    assert [m["role"] for m in record["messages"]] == ["system", "assistant", "tool", "assistant"]


def test_training_follows_the_active_path_only() -> None:
    record = training_record(branched_conversation(), corrections={}, provenance={})

    assert [m["content"] for m in record["messages"]] == [
        "How do I implement a neural network?",
        "Use PyTorch.",
        "Show me an example.",
    ]


def test_legacy_roles_map_onto_fine_tuning_roles() -> None:
    conversation = tool_conversation()
    conversation.messages[0].role = "developer"
    assistant, answer = conversation.messages[2], conversation.messages[3]
    assistant.tool_calls[0].type = "function_call"
    assistant.tool_calls[0].call_id = answer.tool_call_id = "function_call:m3"
    answer.role, answer.name = "function", "airalogy_search"

    messages = training_record(conversation, corrections={}, provenance={})["messages"]

    assert messages[0]["role"] == "system"
    assert messages[2]["tool_calls"][0]["type"] == "function"
    assert messages[3] == {
        "role": "tool",
        "content": '{"search_result":"primer dimers"}',
        "tool_call_id": "function_call:m3",
    }


def test_images_stay_as_parts_for_vision_fine_tuning() -> None:
    conversation = tool_conversation()
    conversation.messages[1].content_is_string = False
    conversation.messages[1].parts = [
        {"type": "text", "text": "What is this gel?"},
        {"type": "image", "url": "https://example.com/gel.png"},
        {"type": "audio", "data": "UklGRg==", "format": "wav"},
    ]

    messages = training_record(conversation, corrections={}, provenance={})["messages"]

    assert messages[1]["content"] == [
        {"type": "text", "text": "What is this gel?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/gel.png"}},
    ]


def test_the_same_conversation_always_gives_the_same_line() -> None:
    lines = {
        json.dumps(training_record(tool_conversation(), corrections={"m5": "x"}, provenance=PROVENANCE))
        for _ in range(3)
    }

    assert len(lines) == 1


@pytest.mark.parametrize(("format", "document"), input_cases())
def test_every_input_gives_a_training_line_with_declared_tools_and_no_reasoning(format: str, document: Any) -> None:
    conversation = parse_document(document, format=format)

    record = training_record(conversation, corrections={}, provenance={"format": format})

    line = json.dumps(record, ensure_ascii=False)
    assert "reasoning_content" not in line
    assert "<think>" not in line
    called = {call["function"]["name"] for m in record["messages"] for call in m.get("tool_calls", [])}
    assert {tool["function"]["name"] for tool in record.get("tools", [])} == called
    assert record["metadata"] == {"format": format}
