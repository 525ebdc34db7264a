"""Fuzzing the Open WebUI parser (chats/ingest/openwebui.py): histories built to break links (cycles, parents that
are gone, ids that disagree with their keys) with ratings in annotations, checked against an independent oracle; and
the reasoning block it writes and splits back. (Every entry point on any JSON: tests/fuzz/test_parsers.py.)"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from chats.formats import openwebui as openwebui_format
from chats.formats.canonical import Conversation, ParseError
from tests.fuzz.parser_checks import PARSERS, exercise, unrooted
from tests.fuzz.strategies import NODE_IDS, characters, json_values, scalars, texts


@st.composite
def openwebui_documents(draw: st.DrawFn) -> Any:
    ids = draw(st.lists(st.sampled_from(NODE_IDS), min_size=1, max_size=8, unique=True))
    messages: dict[str, Any] = {}
    for message_id in ids:
        role = draw(st.sampled_from(["user", "assistant"]))
        content = draw(
            st.one_of(
                texts,
                st.sampled_from(
                    [
                        openwebui_format.quote_reasoning("why") + "answer",
                        '<details type="reasoning" done="false">\n<summary>Thinking…</summary>\n> cut',
                        '<details type="reasoning">&gt; escaped</details>after',
                    ]
                ),
            )
        )
        message: dict[str, Any] = {
            "id": draw(st.sampled_from([message_id, message_id, "other"])),
            "parentId": draw(st.one_of(st.none(), st.sampled_from(ids), st.just("gone"))),
            "childrenIds": draw(st.lists(st.sampled_from(ids), max_size=3)),  # need not agree with the parents
            "role": role,
            "content": content,
            "timestamp": draw(st.one_of(st.none(), st.integers(0, 2_000_000_000))),
        }
        if draw(st.booleans()):
            message["annotation"] = draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "rating": st.one_of(st.sampled_from([1, -1, 0, None]), scalars),
                        "comment": texts,
                        "reason": texts,
                        "tags": st.lists(texts, max_size=2),
                    },
                )
            )
        if draw(st.booleans()):
            message["files"] = draw(
                st.lists(
                    st.one_of(st.just({"type": "image", "url": "data:image/png;base64,AA=="}), json_values), max_size=2
                )
            )
        messages[message_id] = message
    current = draw(st.one_of(st.none(), st.sampled_from(ids), st.just("gone")))
    item = {"id": "owui", "chat": {"models": ["m"], "history": {"messages": messages, "currentId": current}}}
    return [item] if draw(st.booleans()) else item


@PARSERS
@given(document=openwebui_documents())
@example(document={"chat": {"history": {"messages": {"a": {"role": "user", "parentId": "a", "content": ""}}}}})
def test_openwebui_refuses_cycles_roots_dangling_parents_and_rates_by_annotation(document: Any) -> None:
    item = document[0] if isinstance(document, list) else document
    prefix = "/0" if isinstance(document, list) else ""
    messages = item["chat"]["history"]["messages"]
    parent_of = {
        key: message["parentId"] if message["parentId"] in messages else None for key, message in messages.items()
    }
    cycles = {openwebui_pointer(prefix, key) + "/parentId" for key in unrooted(parent_of)}

    outcome = exercise(document)["openwebui"]

    if cycles:
        assert isinstance(outcome, ParseError)
        assert {issue.path for issue in outcome.errors} == cycles
        return
    assert isinstance(outcome, Conversation), outcome
    assert {message.key: message.parent_key for message in outcome.messages} == parent_of
    warned = {warning.path for warning in outcome.warnings}
    for key, message in messages.items():
        if message["parentId"] not in (None, *messages):
            assert openwebui_pointer(prefix, key) + "/parentId" in warned
    current = item["chat"]["history"]["currentId"]
    leaves = [m for m in outcome.messages if m.key not in set(parent_of.values())]
    if current in messages:
        assert outcome.active_leaf_key == current
    else:
        assert outcome.active_leaf_key in {m.key for m in leaves}
    expected = [
        (key, message["annotation"]["rating"])
        for key, message in messages.items()
        if isinstance(message.get("annotation"), dict)
        and message["annotation"].get("rating") in (1, -1)
        and not isinstance(message["annotation"]["rating"], bool)
    ]
    assert [(f.message_key, f.score) for f in outcome.feedback if f.score is not None] == expected


def openwebui_pointer(prefix: str, message_id: str) -> str:
    return f"{prefix}/chat/history/messages/" + message_id.replace("~", "~0").replace("/", "~1")


@PARSERS
@given(
    reasoning=st.text(characters, max_size=40),
    answer=st.text(characters, max_size=40).filter(lambda text: openwebui_format.REASONING_OPEN not in text),
)
@example(reasoning="a\n</details>\nb", answer="\n</details>")
@example(reasoning="", answer="")
def test_exported_reasoning_splits_back_exactly(reasoning: str, answer: str) -> None:
    assert openwebui_format.split_reasoning(openwebui_format.quote_reasoning(reasoning) + answer) == (answer, reasoning)


_MARKERS = ['<details type="reasoning"', ' done="true">', ">", "\n", "</details>", "<summary>", "</summary>"]


@PARSERS
@given(pieces=st.lists(st.one_of(st.sampled_from([*_MARKERS, "> ", "&gt; "]), st.text(characters, max_size=4))))
def test_any_text_splits_into_an_answer_and_reasoning_from_its_pieces(pieces: list[str]) -> None:
    text = "".join(pieces)

    answer, reasoning = openwebui_format.split_reasoning(text)

    assert isinstance(answer, str) and isinstance(reasoning, str)
    if openwebui_format.REASONING_OPEN not in text:
        assert (answer, reasoning) == (text, "")
    else:
        assert len(answer) <= len(text)
