"""The tree exporters (chat_graph, chatgpt_export) on hand-built conversations."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from chats.export import export_conversation
from chats.ingest import parse_document
from tests.factories.export_documents import CHAT_GRAPH, CHATGPT_EXPORT
from tests.factories.exports import branched_conversation, injection_conversation, text_message, tool_conversation

PROTOCOL = (
    "airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1"  # the one builders.injection_conversation injects
)


def test_chat_graph_keeps_every_branch_with_its_parent_links_and_epoch_timestamps() -> None:
    result = export_conversation(branched_conversation(format="openai"), "chat_graph")

    nodes = result.document["nodes"]
    assert [(n["node_id"], n["parent_id"]) for n in nodes] == [
        ("m1", None),
        ("m2a", "m1"),
        ("m2b", "m1"),
        ("m3", "m2b"),
    ]
    assert nodes[0] == {
        "node_id": "m1",
        "parent_id": None,
        "timestamp": 1625216400,
        "message": {
            "id": "m1",
            "author": {"role": "user", "metadata": {}},
            "content": {"content_type": "text", "parts": ["How do I implement a neural network?"]},
            "context": [],
        },
    }
    assert result.document["conversation_id"] == "123456"
    assert not any("branch" in note for note in result.omitted)


def test_chat_graph_puts_the_active_leaf_last_so_a_reader_taking_the_last_node_agrees() -> None:
    conversation = branched_conversation(format="openai")
    conversation.active_leaf_key = "m2a"

    nodes = export_conversation(conversation, "chat_graph").document["nodes"]

    assert [n["node_id"] for n in nodes] == ["m1", "m2b", "m3", "m2a"]


def test_chat_graph_carries_tool_calls_and_reasoning_on_the_message() -> None:
    nodes = export_conversation(tool_conversation(format="openai"), "chat_graph").document["nodes"]

    assert nodes[2]["message"]["tool_calls"] == [
        {
            "id": "call_abc123",
            "type": "function",
            "function": {"name": "airalogy_search", "arguments": '{"keywords":["PCR"]}'},
        }
    ]
    assert nodes[2]["message"]["reasoning_content"] == "I should search first."
    assert nodes[3]["message"]["tool_call_id"] == "call_abc123"


def test_chatgpt_export_hangs_the_messages_from_a_message_less_root_and_points_at_the_active_leaf() -> None:
    result = export_conversation(branched_conversation(format="openai"), "chatgpt_export")

    mapping = result.document["mapping"]
    assert mapping["client-created-root"] == {
        "id": "client-created-root",
        "message": None,
        "parent": None,
        "children": ["m1"],
    }
    assert mapping["m1"]["children"] == ["m2a", "m2b"]
    assert mapping["m2b"]["parent"] == "m1"
    assert result.document["current_node"] == "m3"
    assert result.document["id"] == "123456"
    message = mapping["m3"]["message"]
    assert message["author"] == {"role": "user", "name": None, "metadata": {}}
    assert message["content"] == {"content_type": "text", "parts": ["Show me an example."]}
    assert message["create_time"] == 1625216580.0
    assert message["weight"] == 1.0
    assert message["recipient"] == "all"


def test_chatgpt_export_keeps_tool_calls_in_message_metadata_and_reads_them_back() -> None:
    result = export_conversation(tool_conversation(format="openai"), "chatgpt_export")

    mapping = result.document["mapping"]
    calling = next(node for node in mapping.values() if node["id"] == "m3")
    assert calling["message"]["metadata"]["tool_calls"][0]["id"] == "call_abc123"
    assert calling["message"]["metadata"]["reasoning_content"] == "I should search first."
    assert mapping["m4"]["message"]["metadata"]["tool_call_id"] == "call_abc123"
    assert result.omitted == ["user id"]  # nothing about tool calls or reasoning: they come back
    again = parse_document(result.document)
    by_key = {m.key: m for m in again.messages}
    assert [(c.call_id, c.name, c.arguments) for c in by_key["m3"].tool_calls] == [
        ("call_abc123", "airalogy_search", '{"keywords":["PCR"]}')
    ]
    assert by_key["m3"].reasoning == "I should search first."
    assert by_key["m4"].tool_call_id == "call_abc123"
    assert again.warnings == []


def test_chat_graph_reads_back_tool_calls_and_the_artifacts_they_inject() -> None:
    result = export_conversation(injection_conversation(), "chat_graph")

    again = parse_document(result.document)

    assert again.format == "chat_graph"
    assert not any("tool calls" in note or "artifacts" in note for note in result.omitted)
    [calling] = [m for m in again.messages if m.tool_calls]
    assert [(c.call_id, c.name, c.parsed_arguments) for c in calling.tool_calls] == [
        ("call_inj", "inject_airalogy_protocols", {"airalogy_protocol_ids": [PROTOCOL]})
    ]
    assert [(a.kind, a.artifact_id, a.requested, a.resolved) for a in again.artifacts] == [
        ("protocol", PROTOCOL, True, True)
    ]
    assert again.warnings == []


def test_a_chatgpt_recipient_call_travels_as_its_recipient_only() -> None:
    conversation = parse_document(CHATGPT_EXPORT)
    for message in conversation.messages:
        message.raw = None  # rebuilt from the canonical fields

    document = export_conversation(conversation, "chatgpt_export").document
    again = parse_document(document)

    calling = document["mapping"]["a2"]["message"]
    assert calling["recipient"] == "python"
    assert "tool_calls" not in calling["metadata"]
    assert document["mapping"]["t1"]["message"]["metadata"] == {"tool_call_id": "a2"}
    [call] = next(m for m in again.messages if m.key == "a2").tool_calls
    assert (call.call_id, call.type, call.name) == ("a2", "recipient", "python")
    assert again.warnings == []


def test_chatgpt_export_carries_title_times_and_model_slug() -> None:
    document = export_conversation(tool_conversation(format="openai"), "chatgpt_export").document

    assert document["title"] == "PCR bands"
    assert document["create_time"] == 1740816000.0
    assert document["default_model_slug"] == "qwen3.5-flash"


def test_hidden_messages_stay_hidden_in_chatgpt_export_and_are_reported_elsewhere() -> None:
    conversation = tool_conversation(format="chatgpt_export")
    conversation.messages[0].hidden = True

    chatgpt = export_conversation(conversation, "chatgpt_export")
    openai = export_conversation(conversation, "openai")

    assert chatgpt.document["mapping"]["m1"]["message"]["weight"] == 0.0
    assert "hidden flags (hidden messages exported as visible)" in openai.omitted


def test_a_branch_added_after_a_chatgpt_import_is_listed_among_its_parents_children() -> None:
    conversation = parse_document(CHATGPT_EXPORT)
    regenerated = text_message("a4", "assistant", "Here is a better plot.", "t1")
    conversation.messages.append(regenerated)
    conversation.active_leaf_key = "a4"

    document = export_conversation(conversation, "chatgpt_export").document

    assert document["mapping"]["t1"]["children"] == ["a3", "a4"]
    assert document["mapping"]["a4"]["parent"] == "t1"
    assert document["mapping"]["aaa-root"]["children"] == ["sys"]
    assert document["current_node"] == "a4"
    assert CHATGPT_EXPORT["mapping"]["t1"]["children"] == ["a3"]  # the received node is not changed


def test_chatgpt_export_gives_create_and_update_time_back_as_written() -> None:
    document = {**CHATGPT_EXPORT, "create_time": 1709280000.123456789, "update_time": 1709280300}
    conversation = parse_document(document)
    assert conversation.started_at is not None

    exported = export_conversation(conversation, "chatgpt_export").document

    assert (exported["create_time"], exported["update_time"]) == (1709280000.123456789, 1709280300)
    conversation.started_at += timedelta(seconds=1)  # another instant than the one written: the stored one wins
    assert export_conversation(conversation, "chatgpt_export").document["create_time"] == 1709280001.123457


def test_a_chat_graph_node_whose_content_has_no_parts_keeps_its_content_type() -> None:
    document = copy.deepcopy(CHAT_GRAPH)
    code = {"content_type": "code", "language": "python", "text": "import torch"}
    output = {"content_type": "execution_output", "text": "2.3.0"}
    document["nodes"][1]["message"]["content"] = code
    document["nodes"][2]["message"]["content"] = output
    conversation = parse_document(document)

    nodes = {node["node_id"]: node for node in export_conversation(conversation, "chat_graph").document["nodes"]}

    assert nodes["node-2"]["message"]["content"] == code
    assert nodes["node-3"]["message"]["content"] == output
    assert [m.text for m in conversation.messages[1:]] == ["import torch", "2.3.0"]


def wrapped_graph() -> dict[str, Any]:
    return {"logger": "masterbrain", "chat_graph": {**copy.deepcopy(CHAT_GRAPH), "app": "lab-bot"}, "level": "info"}


def test_a_wrapped_chat_graph_exports_wrapped_again() -> None:
    document = wrapped_graph()

    result = export_conversation(parse_document(document), "chat_graph")

    assert result.document == document
    assert list(result.document) == ["logger", "chat_graph", "level"]
    assert result.omitted == []


def test_a_wrapped_chat_graph_in_another_format_has_the_keys_around_and_inside_the_graph_at_the_top() -> None:
    conversation = parse_document(wrapped_graph())

    for format in ("chat_history", "chatgpt_export"):
        result = export_conversation(conversation, format)
        again = parse_document(result.document)
        assert again.format == format
        assert again.metadata == {"logger": "masterbrain", "level": "info", "app": "lab-bot"}, format
        assert not any("chat_graph" in note for note in result.omitted), format
    openai = export_conversation(conversation, "openai").omitted
    assert "top-level keys: app, level, logger" in openai
    # A graph that came unwrapped goes out unwrapped.
    assert "chat_graph" not in export_conversation(parse_document(CHAT_GRAPH), "chat_graph").document
