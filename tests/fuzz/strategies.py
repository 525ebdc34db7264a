"""Hypothesis strategies for fuzzing the parsers: arbitrary JSON values within what ``strict_json.loads`` can return, odd
strings and huge numbers, and near-valid documents (the real-shaped fixtures of each format with fields mutated:
wrong types, missing and extra keys, huge and negative numbers, odd unicode with lone surrogates and NUL, deep
nesting, ids copied elsewhere). The structures built to break links are in the test files that check them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from chats.formats.canonical import FORMATS
from tests.factories.documents import malformed_documents, valid_documents
from tests.fuzz.parser_checks import (
    CALL_KEYS,
    CHATGPT_MESSAGE_KEYS,
    GRAPH_MESSAGE_KEYS,
    GRAPH_NODE_KEYS,
    OPENAI_MESSAGE_KEYS,
    OPENWEBUI_MESSAGE_KEYS,
    TOP_LEVEL_KEYS,
    WRAPPER_KEYS,
)

ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff",
    "x\ud83d",
    "\ud83d\ude00",
    "\ufeff",
    "\u202e",
    "\u0301",
    "\uffff",
    "\U0010ffff",
    "~0~1/",
    "/",
    "~",
    "0",
    "-1",
    "1e999",
    "NaN",
    "null",
    "<think>",
    "</think>",
    "<think>x</think>",
    "{",
    "[",
    '{"a": NaN}',
    "[" * 3000,
    "1" * 5000,
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "2026-02-30T00:00:00",
    "call_1",
    "node-1",
    "airalogy.id.record.00000000-0000-0000-0000-000000000000.v.1",
    "thumbsUp",
    "a" * 10_000,
]
HUGE_NUMBERS = [
    0,
    -1,
    2**31,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
    -(10**30),
    10**4299,
    -(10**4299),
    1.7976931348623157e308,
    -1.7976931348623157e308,
    5e-324,
    -0.0,
    0.5,
    1e-7,
    253402300800,  # the first second of year 10000
    -62135596801,  # the last second before year 1
]
KNOWN_KEYS = sorted(
    OPENAI_MESSAGE_KEYS
    | CALL_KEYS
    | GRAPH_NODE_KEYS
    | GRAPH_MESSAGE_KEYS
    | CHATGPT_MESSAGE_KEYS
    | WRAPPER_KEYS
    | {key for keys in TOP_LEVEL_KEYS.values() for key in keys}
    | {"main_messages", "messages", "history", "parts", "content_type", "metadata", "parent", "children"}
    | {"input", "text", "image_url", "url", "detail", "input_audio", "file", "refusal", "score", "additional"}
    | {"thoughts", "summary", "asset_pointer", "is_visually_hidden_from_conversation", "model_slug"}
    | {"inject_airalogy_protocols", "airalogy_protocol_ids", "ids", "rating", "message_id"}
    | OPENWEBUI_MESSAGE_KEYS
    | {"currentId", "models", "modelName", "comment", "reason", "tags", "type", "name"}
)

characters = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),  # lone surrogates: json accepts "\ud800", and so must the parsers
    st.sampled_from('\x00\ufeff\u202e/~{}[]<>"\\'),
)
texts = st.one_of(st.text(characters, max_size=12), st.sampled_from(ODD_STRINGS))
numbers = st.one_of(
    st.integers(min_value=-(10**4299), max_value=10**4299),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(HUGE_NUMBERS),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), texts)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=6),
    max_leaves=30,
)


def nest(leaf: Any, depth: int, kind: str) -> Any:
    """``leaf`` under ``depth`` lists or objects, built without recursion."""
    for _ in range(depth):
        leaf = [leaf] if kind == "list" else {"k": leaf}
    return leaf


odd_values = st.one_of(scalars, json_values, st.just([]), st.just({}))


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))  # in C: copies nesting that copy.deepcopy would recurse on


def _locations(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in the document, outermost first."""
    found: list[tuple[Any, Any]] = []
    stack = [document]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            found.append((node, key))
            if len(found) < 2000:
                stack.append(value)
    return found


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A seed document with one to four fields changed, then maybe one field nested deep.

    Deep nesting comes last and once, so that the document stays within the depth the decoder accepts.
    """
    document = _copy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        locations = _locations(document)
        if not locations:
            break
        container, key = draw(st.sampled_from(locations))
        operation = draw(st.sampled_from(["replace", "delete", "add", "transplant", "duplicate", "retype"]))
        if operation == "replace":
            container[key] = draw(odd_values)
        elif operation == "delete":
            del container[key]
        elif operation == "add":
            if isinstance(container, dict):
                container[draw(keys)] = draw(odd_values)
            else:
                container.insert(key, draw(odd_values))
        elif operation == "transplant":  # another field's value: ids become parents, messages become parts...
            _, (source, source_key) = draw(st.sampled_from(list(enumerate(locations))))
            container[key] = _copy(source[source_key])
        elif operation == "duplicate":
            if isinstance(container, list):
                container.insert(key + 1, _copy(container[key]))
            else:
                container[draw(keys)] = _copy(container[key])
        else:
            value = container[key]
            container[key] = draw(
                st.sampled_from([[value], {"value": value}, json.dumps(value), str(value)[:100], None])
            )
    locations = _locations(document)
    if len(locations) > 0 and draw(st.booleans()):
        container, key = draw(st.sampled_from(locations))
        container[key] = nest(container[key], draw(st.integers(1, 1000)), draw(st.sampled_from(["list", "dict"])))
    return document


def _seeds(format_name: str) -> list[Any]:
    seeds = []
    for path in [*valid_documents(format_name), *malformed_documents(format_name)]:
        document = json.loads(path.read_text(encoding="utf-8"))
        if path.name == "conversations.json":  # a whole ChatGPT export: each conversation, and a list of one
            seeds.extend(document)
            seeds.append(document[:1])
        else:
            seeds.append(document)
    assert seeds, format_name
    return seeds


SEEDS = {format_name: _seeds(format_name) for format_name in FORMATS}

# --- structures built to break links: ids to draw from, and a tool call

NODE_IDS = ["a", "b", "c", "d", "e", "f", "a/b", "~"]
CALL_IDS = ["call_1", "call_2", "call_3"]


def tool_call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
