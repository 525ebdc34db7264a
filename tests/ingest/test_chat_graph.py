from datetime import UTC, datetime

import pytest

from chats.formats.canonical import ParseError
from chats.ingest import chat_graph, detect_format, parse_document
from tests.factories.documents import load_fixture


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


# --- OpenAI-style keys of a node's message: tool calls, results, reasoning, injections ------------------------


@pytest.fixture(scope="module")
def tools():
    return parse_document(load_fixture("chat_graph/tool_calls_and_injections.json"))


@pytest.fixture(scope="module")
def tools_by_key(tools):
    return {message.key: message for message in tools.messages}


def with_message(node_, **keys):
    node_["message"].update(keys)
    return node_


def test_tool_calls_are_read_from_the_node_message_by_the_openai_rules(tools, tools_by_key):
    calling = tools_by_key["node-3"]
    assert [(call.call_id, call.type, call.name, call.index) for call in calling.tool_calls] == [
        ("call_proto", "function", "inject_airalogy_protocols", 0),
        ("call_rec", "function", "inject_airalogy_records", 1),
        ("call_search", "function", "airalogy_search", 2),
    ]
    assert calling.tool_calls[0].parsed_arguments == {
        "airalogy_protocol_ids": ["airalogy.id.protocol.3f6b2c1e-8d4a-4e2b-9c7f-1a2b3c4d5e6f.v.2"]
    }
    truncated = calling.tool_calls[2]
    assert truncated.parsed_arguments is None
    assert truncated.arguments_error.startswith("Expecting ',' delimiter")
    [custom] = tools_by_key["node-9"].tool_calls
    assert (custom.type, custom.name, custom.arguments) == (
        "custom",
        "plot_standard_curve",
        "x: 7 6 5 4 3\ny: 14.1 18.0 21.9 25.9 29.8",
    )
    assert custom.parsed_arguments is None and custom.arguments_error == ""  # free text by contract
    assert calling.extra == {}
    assert [(warning.path, warning.message.split(":")[0]) for warning in tools.warnings] == [
        ("/nodes/2/message/tool_calls/2", "arguments are not valid JSON")
    ]


def test_tool_results_name_their_call_and_the_tool(tools_by_key):
    assert [tools_by_key[key].tool_call_id for key in ("node-4", "node-5", "node-6", "node-10")] == [
        "call_proto",
        "call_rec",
        "call_search",
        "call_plot",
    ]
    assert tools_by_key["node-10"].name == "plot_standard_curve"


def test_reasoning_content_is_read_and_inline_reasoning_still_split(tools_by_key):
    assert tools_by_key["node-3"].reasoning.startswith("The user refers to their record and protocol")
    answer = tools_by_key["node-7"]
    assert answer.reasoning == "Efficiency = 10^(-1/slope) - 1 = 10^(0.255) - 1 ≈ 0.80."
    assert answer.text.startswith("A slope of -3.92 means about 80% efficiency")


def test_reasoning_content_comes_before_inline_reasoning_as_in_an_openai_message():
    both = with_message(
        node("a", None, role="assistant", text="<think>inline</think>Answer"), reasoning_content="field"
    )
    message = chat_graph.parse(graph(both)).messages[0]
    assert (message.reasoning, message.text) == ("field\n\ninline", "Answer")


def test_object_parts_are_normalised_like_openai_parts_and_a_refusal_key_becomes_a_refusal_part(tools_by_key):
    question = tools_by_key["node-2"]
    assert question.parts == [
        {"type": "text", "text": "My qPCR standard curve has a slope of -3.92. Is this amplification plot OK?"},
        {"type": "image", "url": "https://files.example.org/qpcr/amp-plot-0603.png", "detail": "high"},
    ]
    assert question.context_pairs == [["record_page", "/records/qpcr-0603"]]
    refused = tools_by_key["node-7b"]
    assert refused.parts == [{"type": "refusal", "refusal": "I cannot judge the plot from this image alone."}]
    assert refused.text == "I cannot judge the plot from this image alone."
    assert refused.extra == {"rating": "thumbs_down"}


def test_injections_become_artifacts(tools):
    assert [(a.kind, a.artifact_id, a.tool_call_id, a.message_key, a.requested, a.resolved) for a in tools.artifacts] == [
        ("protocol", "airalogy.id.protocol.3f6b2c1e-8d4a-4e2b-9c7f-1a2b3c4d5e6f.v.2", "call_proto", "node-3", True, True),
        ("record", "airalogy.id.record.9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d.v.3", "call_rec", "node-3", True, True),
    ]  # fmt: skip
    assert tools.artifacts[1].payload["data"]["var"] == {"slope": -3.92, "r2": 0.981}
    assert tools.active_leaf_key == "node-11"


def test_orphan_results_and_unanswered_calls_are_warnings_as_for_openai_messages():
    calling = with_message(
        node("a", None, role="assistant", text=""),
        tool_calls=[{"type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
    )
    orphan = with_message(node("t", "a", role="tool", text="42"), tool_call_id=7)
    conversation = chat_graph.parse(graph(calling, orphan))
    assert conversation.messages[1].tool_call_id == "7"  # a numbered call id reads as its text
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/nodes/0/message/tool_calls/0", "tool call has no id; using 'call_0'"),
        ("/nodes/1", "orphan result: tool_call_id '7' matches no call"),
        ("/nodes/0/message/tool_calls/0", "unanswered call: no result for 'call_0'"),
    ]


def test_a_legacy_function_call_is_answered_by_the_function_message_of_that_name():
    calling = with_message(
        node("a", None, role="assistant", text=""), function_call={"name": "lookup", "arguments": ""}
    )
    answer = with_message(node("f", "a", role="function", text="no match"), name="lookup")
    conversation = chat_graph.parse(graph(calling, answer))
    assert conversation.messages[0].tool_calls[0].call_id == "function_call:a"
    assert conversation.messages[1].tool_call_id == "function_call:a"
    assert conversation.warnings == []


def test_values_of_the_wrong_type_are_kept_in_extra_and_a_broken_tool_calls_list_is_an_error():
    odd = with_message(node("a", None, role="assistant"), reasoning_content=["step"], name="bot")
    odd["message"]["author"]["name"] = "masterbrain"
    message = chat_graph.parse(graph(odd)).messages[0]
    assert message.name == "masterbrain"  # the author's name wins
    assert message.extra == {"reasoning_content": ["step"], "name": "bot"}
    with pytest.raises(ParseError) as caught:
        chat_graph.parse(graph(with_message(node("a", None, role="assistant"), tool_calls={"id": "x"})))
    assert [(error.path, error.message) for error in caught.value.errors] == [
        ("/nodes/0/message/tool_calls", "tool_calls must be a list")
    ]


def test_artifact_warnings_point_into_the_node_message():
    calling = with_message(
        node("a", None, role="assistant", text=""),
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "inject_airalogy_records", "arguments": '{"airalogy_record_ids": ["rec-1"]}'},
            }
        ],
    )
    result = with_message(node("t", "a", role="tool", text="not json"), tool_call_id="c1")
    conversation = chat_graph.parse(graph(calling, result))
    assert [(a.artifact_id, a.id_well_formed) for a in conversation.artifacts] == [("rec-1", False)]
    assert [warning.path for warning in conversation.warnings] == [
        "/nodes/0/message/tool_calls/0",
        "/nodes/1/message/content",
    ]


# --- content without parts ----------------------------------------------------------------------------------


def with_content(node_, content):
    node_["message"]["content"] = content
    return node_


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ({"content_type": "code", "language": "python", "text": "print(1)"}, "print(1)"),
        ({"content_type": "execution_output", "text": "1\n"}, "1\n"),
        ({"content_type": "tether_browsing_display", "result": "L1: Q5 polymerase, 98 °C"}, "L1: Q5 polymerase, 98 °C"),
        ({"content_type": "text", "text": "plain text under text"}, "plain text under text"),
        ({"content_type": "sandbox_log", "text": "an unknown type with text"}, "an unknown type with text"),
    ],
)
def test_content_without_parts_is_read_from_where_its_content_type_keeps_the_text(content, text):
    conversation = chat_graph.parse(graph(with_content(node("a", None, role="assistant"), content)))
    message = conversation.messages[0]
    assert message.parts == [{"type": "text", "text": text}]
    assert message.text == text  # what search and excerpts read
    assert message.raw["message"]["content"] is content
    assert conversation.warnings == []


def test_thoughts_without_parts_become_reasoning():
    thoughts = {"content_type": "thoughts", "thoughts": [{"summary": "Check Tm", "content": "Tm is 62 °C."}]}
    message = chat_graph.parse(graph(with_content(node("a", None, role="assistant"), thoughts))).messages[0]
    assert (message.parts, message.reasoning) == ([], "Check Tm\nTm is 62 °C.")


@pytest.mark.parametrize(
    "content",
    [
        {"content_type": "app_pairing_content", "workspaces": [{"id": "w1"}]},
        {"content_type": "code", "language": "python"},
        {"result": {"rows": 3}},
    ],
)
def test_content_with_neither_parts_nor_text_is_kept_verbatim_as_an_unknown_part_with_a_warning(content):
    conversation = chat_graph.parse(graph(with_content(node("a", None), content)))
    assert conversation.messages[0].parts == [{"type": "unknown", "raw": content}]
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/nodes/0/message/content", "content has no parts and no text; kept verbatim as an unknown part")
    ]


def test_empty_content_without_parts_stays_an_empty_message():
    conversation = chat_graph.parse(graph(with_content(node("a", None), {"content_type": "text"})))
    assert conversation.messages[0].parts == []
    assert conversation.warnings == []


# --- a graph wrapped under a chat_graph key -----------------------------------------------------------------


def wrapped(*nodes, **outer):
    return {"logged_at": "2025-03-01T10:00:00+08:00", "chat_graph": {**graph(*nodes), "app": "lab-bot"}, **outer}


def test_a_wrapped_graph_is_detected_and_parsed_as_chat_graph():
    document = wrapped(node("a", None), node("b", "a", role="assistant", text="Hello"))
    assert detect_format(document) == "chat_graph"
    conversation = parse_document(document)
    assert conversation.format == "chat_graph"
    assert conversation.external_id == "g1"  # from inside the wrapper
    assert [(m.key, m.parent_key, m.text) for m in conversation.messages] == [("a", None, "Hi"), ("b", "a", "Hello")]
    assert [m.source_path for m in conversation.messages] == ["/chat_graph/nodes/0", "/chat_graph/nodes/1"]
    # The wrapper's other keys are top-level keys; the graph's own other keys stay under the wrapper key.
    assert conversation.metadata == {"logged_at": "2025-03-01T10:00:00+08:00", "chat_graph": {"app": "lab-bot"}}


def test_a_wrapped_graph_beside_a_chat_history_is_read_as_the_graph():
    document = wrapped(node("a", None), chat_history=[{"role": "user", "content": "Hi"}])
    assert detect_format(document) == "chat_graph"
    assert parse_document(document).metadata["chat_history"] == [{"role": "user", "content": "Hi"}]


def test_errors_and_warnings_of_a_wrapped_graph_point_into_the_wrapper():
    conversation = chat_graph.parse(wrapped(node("a", None), node("b", "gone")))
    assert [warning.path for warning in conversation.warnings] == ["/chat_graph/nodes/1/parent_id"]

    no_role = node("b", "a")
    no_role["message"]["author"] = {}
    with pytest.raises(ParseError) as caught:
        chat_graph.parse(wrapped(node("a", None), no_role))
    assert [(error.path, error.message) for error in caught.value.errors] == [
        ("/chat_graph/nodes/1/message/author/role", "a message needs a role (a non-empty string)")
    ]


def test_a_chat_graph_key_without_nodes_is_no_graph():
    document = {"chat_graph": {"conversation_id": "g1"}, "chat_history": [{"role": "user", "content": "Hi"}]}
    assert detect_format(document) == "chat_history"
