"""The tree exporters (chat_graph, chatgpt_export) on hand-built conversations."""

from __future__ import annotations

from chats.export import export_conversation
from chats.ingest import parse_document

from .builders import branched_conversation, text_message, tool_conversation
from .documents import CHATGPT_EXPORT


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


def test_chatgpt_export_keeps_tool_calls_in_message_metadata_and_says_so() -> None:
    result = export_conversation(tool_conversation(format="openai"), "chatgpt_export")

    mapping = result.document["mapping"]
    calling = next(node for node in mapping.values() if node["id"] == "m3")
    assert calling["message"]["metadata"]["tool_calls"][0]["id"] == "call_abc123"
    assert mapping["m4"]["message"]["metadata"]["tool_call_id"] == "call_abc123"
    assert "tool calls (kept in message metadata)" in result.omitted
    assert "reasoning (kept in message metadata)" in result.omitted


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
