"""Fuzzing the chat graph parser (chats/ingest/chat_graph.py) with trees built to break links: duplicate node ids,
cycles and dangling parents, checked against an independent oracle. (Every entry point on any JSON:
tests/fuzz/test_parsers.py.)"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from chats.formats.canonical import Conversation, ParseError
from tests.fuzz.parser_checks import GRAPH_NODE_KEYS, PARSERS, check_orphan_results, exercise, unrooted
from tests.fuzz.strategies import CALL_IDS, NODE_IDS, json_values, keys, numbers, texts


@st.composite
def graph_documents(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.sampled_from(NODE_IDS), min_size=1, max_size=8))
    nodes = []
    for node_id in ids:
        message: dict[str, Any] = {
            "id": draw(texts),
            "author": {"role": draw(st.sampled_from(["user", "assistant", "tool", "system"])), "metadata": {}},
            "content": {"content_type": "text", "parts": [draw(texts)]},
        }
        if draw(st.booleans()):
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": "search", "arguments": "{}"}}
                for call_id in draw(st.lists(st.sampled_from(CALL_IDS), max_size=2))
            ]
        if draw(st.booleans()):
            message["tool_call_id"] = draw(st.sampled_from([*CALL_IDS, "call_unknown"]))
        node: dict[str, Any] = {
            "node_id": node_id,
            "parent_id": draw(st.one_of(st.none(), st.sampled_from(ids), st.just("dangling"))),
            "timestamp": draw(st.one_of(st.none(), numbers, texts)),
            "message": message,
        }
        if draw(st.booleans()):
            node[draw(keys.filter(lambda key: key not in GRAPH_NODE_KEYS))] = draw(json_values)
        nodes.append(node)
    return {"conversation_id": "graph", "nodes": nodes}


@PARSERS
@given(document=graph_documents())
@example(document={"nodes": [{"node_id": "a", "parent_id": "a", "message": {"author": {"role": "user"}}}]})
def test_chat_graph_refuses_duplicate_ids_and_cycles_and_roots_dangling_parents(document: dict[str, Any]) -> None:
    nodes = document["nodes"]
    first: dict[str, int] = {}
    duplicates = set()
    for index, node in enumerate(nodes):
        if node["node_id"] in first:
            duplicates.add(f"/nodes/{index}/node_id")
        else:
            first[node["node_id"]] = index
    parent_of = {
        node_id: nodes[index]["parent_id"] if nodes[index]["parent_id"] in first else None
        for node_id, index in first.items()
    }
    cycles = {f"/nodes/{first[node_id]}/parent_id" for node_id in unrooted(parent_of)}

    outcome = exercise(document)["chat_graph"]

    if duplicates or cycles:
        assert isinstance(outcome, ParseError)
        assert {issue.path for issue in outcome.errors} == duplicates | cycles
        return
    assert isinstance(outcome, Conversation), outcome
    assert {message.key: message.parent_key for message in outcome.messages} == parent_of
    warned = {warning.path for warning in outcome.warnings}
    for index in first.values():
        if nodes[index]["parent_id"] not in (None, *first):
            assert f"/nodes/{index}/parent_id" in warned
    check_orphan_results(outcome)
