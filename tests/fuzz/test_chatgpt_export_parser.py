"""Fuzzing the ChatGPT export parser (chats/ingest/chatgpt_export.py): mappings built to break links (cycles,
parents that are gone, message-less nodes), checked against an independent oracle; and ChatGPT's
message_feedback.json applied to a parsed export. (Every entry point on any JSON: tests/fuzz/test_parsers.py.)"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from chats.formats.canonical import Conversation, ParseError
from chats.ingest import chatgpt_export
from tests.factories.documents import load_fixture
from tests.fuzz.parser_checks import PARSERS, check_issue, check_orphan_results, exercise, unrooted
from tests.fuzz.strategies import NODE_IDS, json_values, scalars, texts, tool_call


@st.composite
def chatgpt_documents(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.sampled_from(NODE_IDS), min_size=1, max_size=8, unique=True))
    mapping: dict[str, Any] = {}
    for node_id in ids:
        message = None
        if draw(st.booleans()):
            role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
            message = {
                "id": node_id,
                "author": {"role": role, "name": draw(st.sampled_from([None, "python", "browser"]))},
                "content": {"content_type": draw(st.sampled_from(["text", "code", "thoughts"])), "parts": ["x"]},
                "recipient": draw(st.sampled_from(["all", "python", "browser"])),
                "metadata": draw(
                    st.sampled_from(
                        [{}, {"tool_call_id": "call_unknown"}, {"tool_calls": [tool_call("f", "{}")]}, {"x": 1}]
                    )
                ),
            }
        mapping[node_id] = {
            "id": node_id,
            "message": message,
            "parent": draw(st.one_of(st.none(), st.sampled_from(ids), st.just("gone"))),
            "children": draw(st.lists(st.sampled_from(ids), max_size=3)),  # need not agree with the parents
        }
    current = draw(st.one_of(st.none(), st.sampled_from(ids), st.just("gone")))
    return {"id": "export", "mapping": mapping, "current_node": current}


@PARSERS
@given(document=chatgpt_documents())
def test_chatgpt_export_refuses_cycles_and_hangs_messages_from_their_nearest_ancestor(document: dict[str, Any]) -> None:
    mapping = document["mapping"]
    parent_of = {node_id: node["parent"] if node["parent"] in mapping else None for node_id, node in mapping.items()}
    cycles = {chatgpt_pointer(node_id) + "/parent" for node_id in unrooted(parent_of)}

    outcome = exercise(document)["chatgpt_export"]

    if cycles:
        assert isinstance(outcome, ParseError)
        assert {issue.path for issue in outcome.errors} == cycles
        return
    if not any(node["message"] for node in mapping.values()):
        assert isinstance(outcome, ParseError) and [issue.path for issue in outcome.errors] == ["/mapping"]
        return
    assert isinstance(outcome, Conversation), outcome

    def nearest(node_id: str | None) -> str | None:
        while node_id is not None and mapping[node_id]["message"] is None:
            node_id = parent_of[node_id]
        return node_id

    assert {message.key: message.parent_key for message in outcome.messages} == {
        node_id: nearest(parent_of[node_id]) for node_id, node in mapping.items() if node["message"]
    }
    current = document["current_node"]
    assert outcome.active_leaf_key == (nearest(current) if current in mapping else None)
    check_orphan_results(outcome)


def chatgpt_pointer(node_id: str) -> str:
    return "/mapping/" + node_id.replace("~", "~0").replace("/", "~1")


_CHATGPT_SEED = chatgpt_export.parse(load_fixture("chatgpt_export/conversations.json")[0])


@st.composite
def feedback_lists(draw: st.DrawFn) -> Any:
    conversation_ids = [_CHATGPT_SEED.external_id, "unknown"]
    message_ids = [message.key for message in _CHATGPT_SEED.messages] + ["unknown"]
    entry = st.fixed_dictionaries(
        {},
        optional={
            "conversation_id": st.one_of(st.sampled_from(conversation_ids), scalars),
            "message_id": st.one_of(st.sampled_from(message_ids), scalars),
            "rating": st.one_of(st.sampled_from(["thumbsUp", "thumbsDown"]), scalars),
            "content": st.one_of(
                texts,
                st.builds(json.dumps, json_values),
                st.sampled_from(['{"text": "ok", "tags": []}', '{"text": NaN}', "{" + "[" * 5000]),
            ),
        },
    )
    return draw(st.one_of(st.lists(st.one_of(entry, json_values), max_size=6), json_values))


@PARSERS
@given(feedback=feedback_lists())
@example(feedback=[{"conversation_id": _CHATGPT_SEED.external_id, "message_id": _CHATGPT_SEED.messages[-1].key}])
def test_message_feedback_attaches_thumbs_to_named_messages_and_warns_about_the_rest(feedback: Any) -> None:
    conversation = chatgpt_export.parse(load_fixture("chatgpt_export/conversations.json")[0])

    warnings = chatgpt_export.apply_message_feedback([conversation], feedback)

    for warning in warnings:
        check_issue(warning, feedback)
    keys = {message.key for message in conversation.messages}
    for entry in conversation.feedback:
        assert entry.message_key in keys and entry.score in (-1, 1) and isinstance(entry.comment, str)
        assert entry.raw in feedback
    # Each entry gives a thumb or a warning; a value that is not a list, one warning.
    assert len(conversation.feedback) + len(warnings) == (len(feedback) if isinstance(feedback, list) else 1)
