from datetime import UTC, datetime

import pytest

from chats.ingest import chat_graph, parse_document

from . import load_fixture


@pytest.fixture(scope="module")
def document():
    return load_fixture("chat_graph/branched_graph.json")


@pytest.fixture(scope="module")
def conversation(document):
    return parse_document(document)


def graph(*nodes):
    return {"conversation_id": "g1", "nodes": list(nodes)}


def node(node_id, parent_id, timestamp=1715500000, role="user", text="Hi"):
    return {
        "node_id": node_id,
        "parent_id": parent_id,
        "timestamp": timestamp,
        "message": {
            "id": "m-" + node_id,
            "author": {"role": role, "metadata": {}},
            "content": {"content_type": "text", "parts": [text]},
        },
    }


def test_seed_graph_parses_to_node_keyed_messages():
    conversation = parse_document(load_fixture("chat_graph/seed_linear.json"))
    assert conversation.format == "chat_graph"
    assert conversation.external_id == "123456"
    first, second = conversation.messages
    assert (first.key, first.parent_key, first.role) == ("node-1", None, "user")
    assert (second.key, second.parent_key, second.role) == ("node-2", "node-1", "assistant")
    assert first.created_at == datetime(2021, 7, 2, 9, 0, tzinfo=UTC)
    assert first.text == "How do I implement a neural network in Python?"
    assert first.context_pairs == [["", ""]]
    assert not first.content_is_string
    assert conversation.active_leaf_key == "node-2"


def test_branches_keep_their_parents_and_parents_come_first(conversation):
    order = [message.key for message in conversation.messages]
    assert order == ["node-1", "node-2", "node-3", "node-3b", "node-4", "node-5", "node-2e", "node-3e"]
    parents = {message.key: message.parent_key for message in conversation.messages}
    assert parents["node-3"] == parents["node-3b"] == "node-2"
    assert parents["node-2"] == parents["node-2e"] == "node-1"
    assert parents["node-5"] == "node-4"


def test_active_leaf_is_the_most_recent_leaf(conversation):
    assert conversation.active_leaf_key == "node-3e"


def test_active_leaf_ties_go_to_the_later_node_in_the_list():
    conversation = chat_graph.parse(graph(node("a", None, 5), node("b", "a", 9), node("c", "a", 9)))
    assert conversation.active_leaf_key == "c"


def test_node_fields_are_mapped(conversation, document):
    by_key = {message.key: message for message in conversation.messages}
    question = by_key["node-2"]
    assert question.context_pairs == [["assay", "IL-6 sandwich ELISA"], ["plate_reader", "SpectraMax iD3"]]
    assert question.author_metadata == {"client": "web"}
    assert question.raw is document["nodes"][1]
    assert question.source_path == "/nodes/1"
    regenerated = by_key["node-3b"]
    assert regenerated.reasoning.startswith("Plateau at the top end")
    assert regenerated.text.startswith("Check the raw OD values first")
    assert by_key["node-3e"].extra == {"rating": "unrated"}


def test_unmapped_top_level_keys_go_to_metadata(conversation):
    assert conversation.metadata == {"source": "masterbrain-graph-logger"}
    assert conversation.warnings == []


def test_a_node_whose_parent_is_missing_becomes_a_root_with_a_warning():
    conversation = chat_graph.parse(graph(node("a", None), node("b", "gone")))
    assert [message.parent_key for message in conversation.messages] == [None, None]
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/nodes/1/parent_id", "parent 'gone' is not a node; the node is treated as a root")
    ]


def test_invalid_node_context_is_kept_in_extra_with_a_warning():
    bad = node("a", None)
    bad["message"]["context"] = [["temperature", 37]]
    conversation = chat_graph.parse(graph(bad))
    assert conversation.messages[0].extra == {"context": [["temperature", 37]]}
    assert [warning.path for warning in conversation.warnings] == ["/nodes/0/message/context/0"]
