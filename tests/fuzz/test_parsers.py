"""Fuzzing every parser entry point: whatever JSON arrives, the only failure is a ParseError that points into the
document, and whatever parses satisfies the promises of ``chats/ingest/canonical.py``.

Entry points: the seven formats' ``parse``, ``detect_format``, ``parse_document`` (detected, and with a format name
that does not exist), ``apply_message_feedback`` (ChatGPT's thumbs), and ``jsonio.loads``
(the strict decoder every document goes through first, from bytes).

Documents come from three kinds of strategy: arbitrary JSON values; near-valid documents (the real-shaped fixtures
of each format with fields mutated: wrong types, missing and extra keys, huge and negative numbers, odd unicode
with lone surrogates and NUL, deep nesting, ids copied elsewhere); and structures built to break links (cycles,
duplicate and dangling ids in trees, results answering unknown calls), checked against an independent oracle.

The parsers take what ``jsonio.loads`` returns, so generated values stay within what it can return: integers of
at most 4,300 digits, no NaN or infinity, nesting within the decoder's depth.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from chats import ingest, jsonio
from chats.ingest import chat_document, chat_graph, chat_history, chatgpt_export, openai, openwebui, record_qa
from chats.ingest.canonical import (
    ARTIFACT_KINDS,
    FORMATS,
    PART_TYPES,
    Conversation,
    Issue,
    Message,
    ParseError,
    canonical_json,
)
from tests.fixture_documents import load_fixture, malformed_documents, valid_documents

PARSERS = settings.get_profile("fuzz-parsers")
# Each is called by exercise() or a test of its own below; the last test keeps this list complete.
FUZZED_ENTRY_POINTS = {
    "openai.parse",
    "chat_document.parse",
    "record_qa.parse",
    "chat_history.parse",
    "chat_graph.parse",
    "chatgpt_export.parse",
    "openwebui.parse",
    "detect_format",
    "parse_document",
    "apply_message_feedback",
    "jsonio.loads",
}

MODULES = {
    module.NAME: module
    for module in (openai, chat_document, record_qa, chat_history, chat_graph, chatgpt_export, openwebui)
}
assert set(MODULES) == set(FORMATS)

# --- what the canonical form promises to keep (the documented keys of each format) ----------------------------

OPENAI_MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "function_call", "tool_call_id", "refusal", "reasoning_content"}
)
CALL_KEYS = frozenset({"id", "type", "function", "custom", "arguments", "name"})
GRAPH_NODE_KEYS = frozenset({"node_id", "parent_id", "timestamp", "message"})
GRAPH_MESSAGE_KEYS = (OPENAI_MESSAGE_KEYS - {"role"}) | {"id", "author", "context"}
CHATGPT_MESSAGE_KEYS = frozenset({"id", "author", "content", "create_time", "recipient", "weight"})
# An Open WebUI message: its own keys, the OpenAI-style ones its parser reads, and `annotation` (a rating, or extra).
OPENWEBUI_MESSAGE_KEYS = (
    frozenset({"id", "parentId", "childrenIds", "role", "content", "timestamp", "files", "annotation"})
    | OPENAI_MESSAGE_KEYS
)
# The `chat` keys read into fields; its other keys are kept in metadata["chat"].
OPENWEBUI_CHAT_KEYS = frozenset({"history", "messages"})
WRAPPER_KEYS = frozenset(
    {"chat_id", "user_id", "title", "model", "start_time", "end_time", "scenario", "scenario_messages"}
    | {"human_feedback"}
)
TOP_LEVEL_KEYS: dict[str, frozenset[str]] = {
    "chat_document": WRAPPER_KEYS,  # and the message list used
    "record_qa": WRAPPER_KEYS | {"context"},
    "chat_history": frozenset({"chat_history", "conversation_id", "context"}),
    "chat_graph": frozenset({"conversation_id", "nodes"}),
    "chatgpt_export": frozenset(
        {"id", "conversation_id", "title", "create_time", "update_time", "current_node", "mapping"}
        | {"default_model_slug"}
    ),
    "openwebui": frozenset({"id", "user_id", "title", "chat", "created_at", "updated_at"}),
}
# Formats of which a JSON array of one conversation is that conversation.
LIST_FORMATS = ("chatgpt_export", "openwebui")

# --- JSON pointers --------------------------------------------------------------------------------------------

_POINTER = re.compile(r"(/([^~/]|~[01])*)*")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def resolve(document: Any, path: str) -> tuple[Any, int]:
    """The value at ``path`` (or at its longest existing prefix), and how many of its tokens lead nowhere."""
    tokens = path.split("/")[1:]
    current = document
    for position, token in enumerate(tokens):
        key = _unescape(token)
        if isinstance(current, dict) and key in current:
            current = current[key]
        elif isinstance(current, list) and re.fullmatch(r"0|[1-9][0-9]*", token) and int(token) < len(current):
            current = current[int(token)]
        else:
            return current, len(tokens) - position
    return current, 0


def check_issue(issue: Issue, document: Any) -> None:
    """A warning or error: a message, and a JSON pointer into the document ("" being the whole document).

    A pointer may name a key that is missing (``/0/role`` when the role is), or a missing object and its key
    (``/mapping/n1/message/author/role`` when there is no author): no more than two tokens lead nowhere.
    """
    assert isinstance(issue, Issue)
    assert isinstance(issue.message, str) and issue.message.strip(), issue
    assert isinstance(issue.path, str)
    assert _POINTER.fullmatch(issue.path), f"not a JSON pointer: {issue.path!r}"
    _, missing = resolve(document, issue.path)
    assert missing <= 2, f"{issue.path!r} does not point into the document ({issue.message})"


def check_parse_error(error: ParseError, document: Any) -> None:
    assert error.errors, "a ParseError without errors"
    for issue in error.errors:
        check_issue(issue, document)


# --- what a parsed conversation promises ----------------------------------------------------------------------


def storable(value: Any) -> None:
    """What the service stores as JSON: encodable, with no NaN or infinity."""
    json.dumps(value, allow_nan=False)


def _is_utc(moment: Any) -> bool:
    return moment is None or (moment.tzinfo is not None and moment.utcoffset().total_seconds() == 0)


def _raw_calls(format_name: str, message: Message) -> Any:
    """The list of tool call objects a message was sent with, if any."""
    raw = message.raw
    if format_name == "chat_graph":
        raw = raw["message"]
    elif format_name == "chatgpt_export":
        raw = raw["message"].get("metadata")
    return raw.get("tool_calls") if isinstance(raw, dict) else None


def check_message(message: Message, format_name: str, document: Any) -> None:
    assert isinstance(message.key, str) and message.key
    assert isinstance(message.role, str) and message.role
    for name in ("name", "text", "reasoning", "tool_call_id", "recipient"):
        assert isinstance(getattr(message, name), str), name
    assert message.section in ("main", "scenario")
    assert _is_utc(message.created_at)
    for part in message.parts:
        assert isinstance(part, dict) and part.get("type") in PART_TYPES, part
        if part["type"] == "text":
            assert isinstance(part["text"], str)
        if part["type"] == "unknown":
            assert "raw" in part
    assert all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(side, str) for side in pair)
        for pair in message.context_pairs
    )
    for call in message.tool_calls:
        assert isinstance(call.call_id, str) and call.call_id
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.type, str) and call.type
        assert isinstance(call.arguments, str) and isinstance(call.arguments_error, str)
        storable(call.parsed_arguments)
        storable(call.extra)
    for value in (message.parts, message.extra, message.author_metadata, message.context_pairs, message.raw):
        storable(value)

    # Verbatim: `raw` is the message (or node) where `source_path` says, and unknown keys are kept in `extra`.
    found, missing = resolve(document, message.source_path)
    assert missing == 0 and found is message.raw, message.source_path
    raw = message.raw
    if format_name == "chat_graph":
        body = raw["message"]
        shadowed = set(body) | GRAPH_MESSAGE_KEYS
        expected = {k: v for k, v in raw.items() if k not in GRAPH_NODE_KEYS and k not in shadowed}
        expected |= {k: v for k, v in body.items() if k not in GRAPH_MESSAGE_KEYS}
    elif format_name == "chatgpt_export":
        expected = {k: v for k, v in raw["message"].items() if k not in CHATGPT_MESSAGE_KEYS}
    elif format_name == "openwebui":
        expected = {k: v for k, v in raw.items() if k not in OPENWEBUI_MESSAGE_KEYS}
    else:
        expected = {k: v for k, v in raw.items() if k not in OPENAI_MESSAGE_KEYS}
        if format_name == "chat_history" and "context" in expected and "context" not in message.extra:
            assert message.context_pairs is raw["context"]  # valid pairs move to their field
            del expected["context"]
    for key, value in expected.items():
        assert key in message.extra and message.extra[key] is value, f"{message.source_path}: {key!r} lost"
    raw_calls = _raw_calls(format_name, message)
    for call in message.tool_calls:
        # A legacy function_call and a ChatGPT recipient are not items of a tool_calls list.
        if call.type == "recipient" or call.call_id.startswith("function_call:") or not isinstance(raw_calls, list):
            continue
        for key, value in raw_calls[call.index].items():
            if key not in CALL_KEYS:
                assert call.extra.get(key) is value, f"{message.source_path}: call key {key!r} lost"


def check_conversation(conversation: Conversation, document: Any, format_name: str) -> None:
    """The promises of canonical.py, for a document parsed in ``format_name``."""
    assert isinstance(conversation, Conversation)
    assert conversation.format == format_name
    assert conversation.messages, "a conversation without messages"
    conversation_document = document
    if format_name in LIST_FORMATS and isinstance(document, list):
        conversation_document = document[0]

    keys: set[str] = set()
    for message in conversation.messages:
        assert message.parent_key is None or message.parent_key in keys, "a parent after its child, or missing"
        assert message.key not in keys, f"duplicate key {message.key!r}"
        keys.add(message.key)
        check_message(message, format_name, document)
    assert conversation.active_leaf_key is None or conversation.active_leaf_key in keys

    assert conversation.external_id is None or (isinstance(conversation.external_id, str) and conversation.external_id)
    for name in ("title", "user_id", "model_name"):
        assert isinstance(getattr(conversation, name), str), name
    assert _is_utc(conversation.started_at) and _is_utc(conversation.ended_at)
    for value in (
        conversation.metadata,
        conversation.scenario,
        conversation.injection_context,
        conversation.model,
        conversation.context_pairs,
    ):
        storable(value)
    for artifact in conversation.artifacts:
        assert artifact.kind in ARTIFACT_KINDS
        assert isinstance(artifact.artifact_id, str) and artifact.artifact_id
        assert artifact.message_key in keys
        assert artifact.requested or artifact.resolved
        storable(artifact.payload)
    for feedback in conversation.feedback:
        assert feedback.message_key is None or feedback.message_key in keys
        assert feedback.score in (-1, 0, 1, None) and type(feedback.score) in (int, type(None))
        storable(feedback.raw)
    for warning in conversation.warnings:
        check_issue(warning, document)

    # Every top-level key no field holds is kept verbatim in metadata.
    if isinstance(conversation_document, dict):
        known = TOP_LEVEL_KEYS[format_name]
        if format_name in ("chat_document", "record_qa"):
            known |= {next(k for k in chat_document.MESSAGE_LIST_KEYS if isinstance(document.get(k), list))}
        for key, value in conversation_document.items():
            if key not in known:
                assert conversation.metadata.get(key) is value, f"top-level {key!r} lost"
        for key, value in conversation.metadata.items():
            if format_name == "openwebui" and key == openwebui.METADATA_CHAT_KEY:
                continue  # the chat's own other keys, checked below
            assert conversation_document.get(key) is value, f"metadata {key!r} is not the document's"
    else:
        assert conversation.metadata == {}
    if format_name == "openwebui":
        _check_openwebui_keys(conversation, conversation_document)


def _check_openwebui_keys(conversation: Conversation, item: dict[str, Any]) -> None:
    """The `chat` keys no field holds are in metadata["chat"], verbatim (its linear `messages` copy only when it
    is not the active branch as received); every annotation is a rating's raw or is kept in extra."""
    chat = item["chat"]
    kept = conversation.metadata.get(openwebui.METADATA_CHAT_KEY, {})
    for key, value in chat.items():
        if key not in OPENWEBUI_CHAT_KEYS:
            assert kept[key] is value, f"chat key {key!r} lost"
    assert set(kept) <= set(chat)
    branch = [message.raw for message in _active_branch(conversation)]
    if "messages" in chat:
        is_copy = isinstance(chat["messages"], list) and [canonical_json(m) for m in chat["messages"]] == [
            canonical_json(m) for m in branch
        ]
        assert ("messages" in kept) is not is_copy and (is_copy or kept["messages"] is chat["messages"])
    else:
        assert "messages" not in kept
    history_rest = {k: v for k, v in chat["history"].items() if k not in ("messages", "currentId")}
    assert kept.get("history", {}) == history_rest
    assert all(kept["history"][k] is v for k, v in history_rest.items())

    ratings = {id(feedback.raw) for feedback in conversation.feedback}
    for message in conversation.messages:
        if "annotation" in message.raw:
            annotation = message.raw["annotation"]
            assert (id(annotation) in ratings) is not (message.extra.get("annotation") is annotation)
    assert all(f.origin == "openwebui" and f.score in (1, -1, None) for f in conversation.feedback)


def _active_branch(conversation: Conversation) -> list[Message]:
    by_key = {message.key: message for message in conversation.messages}
    branch, key = [], conversation.active_leaf_key
    while key is not None:
        branch.append(by_key[key])
        key = by_key[key].parent_key
    return branch[::-1]


# --- running every entry point --------------------------------------------------------------------------------


def _outcome(call: Callable[[], Any], document: Any) -> Any:
    """The result, or the ParseError (checked); any other exception fails the test."""
    try:
        return call()
    except ParseError as error:
        check_parse_error(error, document)
        return error


def exercise(document: Any) -> dict[str, Any]:
    """Call every parser entry point on ``document``; check each outcome; return them by format."""
    canonical_json(document)  # the service hashes every document first
    outcomes: dict[str, Any] = {}
    for name, module in MODULES.items():
        matches = module.matches(document)
        assert isinstance(matches, bool)
        outcome = _outcome(functools.partial(module.parse, document), document)
        if isinstance(outcome, Conversation):
            assert matches, f"{name} parsed a document it does not match"
            check_conversation(outcome, document, name)
        elif not matches:
            assert [issue.path for issue in outcome.errors] == [""]
        outcomes[name] = outcome

    detected = _outcome(lambda: ingest.detect_format(document), document)
    if isinstance(detected, str):
        assert detected in FORMATS and MODULES[detected].matches(document)
        parsed = _outcome(lambda: ingest.parse_document(document), document)
        # Detection then parsing is parsing in the detected format.
        assert type(parsed) is type(outcomes[detected])
        if isinstance(parsed, Conversation):
            check_conversation(parsed, document, detected)
    else:
        assert [issue.path for issue in detected.errors] == [""]
        assert not any(module.matches(document) for module in MODULES.values())
        assert isinstance(_outcome(lambda: ingest.parse_document(document), document), ParseError)
    unknown = _outcome(lambda: ingest.parse_document(document, format="no_such_format"), document)
    assert isinstance(unknown, ParseError) and [issue.path for issue in unknown.errors] == [""]

    return outcomes


# --- strategies -----------------------------------------------------------------------------------------------

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

# --- arbitrary JSON -------------------------------------------------------------------------------------------


@PARSERS
@given(document=json_values)
@example(document=[{"role": "user", "content": "\ud800"}])  # chain_key could not encode a lone surrogate
@example(document={"main_messages": [{"role": "user", "content": "x"}], "human_feedback": [{"score": []}]})
@example(document={"main_messages": [{"role": "user", "content": "x"}], "start_time": "0001-01-01T00:00:00+01:00"})
@example(document=[{"mapping": {"n": {"message": {"author": {}}}}}])  # errors of a one-item conversations.json
@example(document={"mapping": {"": {"message": {"author": {"role": "user"}}}}})  # "" would be a message's key
def test_arbitrary_json_gives_a_conversation_or_a_parse_error_from_every_entry_point(document: Any) -> None:
    exercise(document)


# --- near-valid documents of each format ----------------------------------------------------------------------


def _tool_call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}


# Drawn as JSON text (ASCII, escapes for odd characters): a failing example prints flat, however deep it is.
NEAR_VALID = {format_name: mutated(SEEDS[format_name]).map(json.dumps) for format_name in FORMATS}


@pytest.mark.parametrize("format_name", FORMATS)
@PARSERS
@given(data=st.data())
def test_near_valid_documents_give_a_conversation_or_a_parse_error_that_points_into_them(
    format_name: str, data: st.DataObject
) -> None:
    document = json.loads(data.draw(NEAR_VALID[format_name], label="document"))

    outcomes = exercise(document)

    # How near to valid the documents are: see `pytest --hypothesis-show-statistics`.
    event("parsed" if isinstance(outcomes[format_name], Conversation) else "refused")


@pytest.mark.parametrize(
    "document",
    [
        [{"role": "assistant", "tool_calls": [_tool_call("f", "[" * 100_000)]}],  # RecursionError
        [{"role": "assistant", "tool_calls": [_tool_call("f", "1" * 5000)]}],  # over int's digit limit
        [{"role": "assistant", "tool_calls": [_tool_call("f", '{"a": NaN}')]}],  # not storable as JSON
        [{"role": "assistant", "tool_calls": [_tool_call("f", "[1e999]")]}],  # infinity
        [
            {"role": "assistant", "tool_calls": [_tool_call("inject_airalogy_protocols", "{}")]},
            {"role": "tool", "tool_call_id": "c", "content": "[" * 100_000},
        ],
        [
            {"role": "assistant", "tool_calls": [_tool_call("inject_airalogy_records", "{}")]},
            {"role": "tool", "tool_call_id": "c", "content": '[{"id": "r", "x": Infinity}]'},
        ],
    ],
    ids=[
        "deep-arguments",
        "long-integer-arguments",
        "nan-arguments",
        "infinite-arguments",
        "deep-result",
        "nan-result",
    ],
)
def test_json_inside_strings_is_decoded_strictly_and_never_raises(document: Any) -> None:
    exercise(document)
    conversation = openai.parse(document)

    assert conversation.messages[0].tool_calls[0].parsed_arguments in (None, {})
    assert all(artifact.payload is None for artifact in conversation.artifacts)


# --- trees: cycles, duplicate and dangling ids ----------------------------------------------------------------

NODE_IDS = ["a", "b", "c", "d", "e", "f", "a/b", "~"]
CALL_IDS = ["call_1", "call_2", "call_3"]


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


def _unrooted(parent_of: dict[str, str | None]) -> set[str]:
    """The nodes whose parent chain never ends: in or under a cycle."""
    rooted: set[str] = set()
    stuck: set[str] = set()
    for start in parent_of:
        chain: list[str] = []
        node: str | None = start
        while node is not None and node not in rooted and node not in stuck and node not in chain:
            chain.append(node)
            node = parent_of[node]
        (stuck if node is not None and node not in rooted else rooted).update(chain)
    return stuck


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
    cycles = {f"/nodes/{first[node_id]}/parent_id" for node_id in _unrooted(parent_of)}

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
    _check_orphan_results(outcome)


def _check_orphan_results(conversation: Conversation) -> None:
    """A result naming a call that no message makes is kept, flagged as an orphan at the result's message."""
    calls = {call.call_id for message in conversation.messages for call in message.tool_calls}
    orphan_paths = {w.path for w in conversation.warnings if w.message.startswith("orphan result")}
    for message in conversation.messages:
        if message.tool_call_id and message.tool_call_id not in calls:
            assert message.source_path in orphan_paths, message.source_path


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
                        [{}, {"tool_call_id": "call_unknown"}, {"tool_calls": [_tool_call("f", "{}")]}, {"x": 1}]
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
    cycles = {chatgpt_pointer(node_id) + "/parent" for node_id in _unrooted(parent_of)}

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
    _check_orphan_results(outcome)


def chatgpt_pointer(node_id: str) -> str:
    return "/mapping/" + node_id.replace("~", "~0").replace("/", "~1")


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
                        openwebui.quote_reasoning("why") + "answer",
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
    cycles = {openwebui_pointer(prefix, key) + "/parentId" for key in _unrooted(parent_of)}

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
    answer=st.text(characters, max_size=40).filter(lambda text: openwebui.REASONING_OPEN not in text),
)
@example(reasoning="a\n</details>\nb", answer="\n</details>")
@example(reasoning="", answer="")
def test_exported_reasoning_splits_back_exactly(reasoning: str, answer: str) -> None:
    assert openwebui.split_reasoning(openwebui.quote_reasoning(reasoning) + answer) == (answer, reasoning)


_MARKERS = ['<details type="reasoning"', ' done="true">', ">", "\n", "</details>", "<summary>", "</summary>"]


@PARSERS
@given(pieces=st.lists(st.one_of(st.sampled_from([*_MARKERS, "> ", "&gt; "]), st.text(characters, max_size=4))))
def test_any_text_splits_into_an_answer_and_reasoning_from_its_pieces(pieces: list[str]) -> None:
    text = "".join(pieces)

    answer, reasoning = openwebui.split_reasoning(text)

    assert isinstance(answer, str) and isinstance(reasoning, str)
    if openwebui.REASONING_OPEN not in text:
        assert (answer, reasoning) == (text, "")
    else:
        assert len(answer) <= len(text)


# --- tool results linked by id --------------------------------------------------------------------------------


@st.composite
def tool_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["call", "result", "legacy_call", "legacy_result", "text"]))
        if kind == "call":
            ids = draw(st.lists(st.sampled_from([*CALL_IDS, None]), min_size=1, max_size=3))
            calls = [_tool_call("search", draw(st.sampled_from(["{}", "", "{", "[1e999]"]))) for _ in ids]
            for call, call_id in zip(calls, ids, strict=True):
                if call_id is None:
                    del call["id"]
                else:
                    call["id"] = call_id
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif kind == "result":
            result_call_id = draw(st.sampled_from([*CALL_IDS, "call_unknown", 7, ""]))
            messages.append({"role": "tool", "tool_call_id": result_call_id, "content": draw(texts)})
        elif kind == "legacy_call":
            messages.append({"role": "assistant", "function_call": {"name": "lookup", "arguments": "{}"}})
        elif kind == "legacy_result":
            messages.append({"role": "function", "name": draw(st.sampled_from(["lookup", "other"])), "content": "1"})
        else:
            messages.append({"role": "assistant", "content": draw(texts)})
    return messages


@PARSERS
@given(document=tool_conversations())
def test_tool_results_link_to_calls_by_id_and_loose_ends_are_warnings(document: list[dict[str, Any]]) -> None:
    outcome = exercise(document)["openai"]

    assert isinstance(outcome, Conversation), outcome
    calls = {call.call_id for message in outcome.messages for call in message.tool_calls}
    warnings = [(warning.path, warning.message) for warning in outcome.warnings]
    for index, raw in enumerate(document):
        call_id = raw.get("tool_call_id")
        if call_id not in (None, "") and str(call_id) not in calls:
            assert (f"/{index}", f"orphan result: tool_call_id '{call_id}' matches no call") in warnings
    answered = {message.tool_call_id for message in outcome.messages if message.tool_call_id}
    for message in outcome.messages:
        for call in message.tool_calls:
            if call.call_id not in answered:
                assert any(m == f"unanswered call: no result for '{call.call_id}'" for _, m in warnings)


# --- decoding, then parsing -----------------------------------------------------------------------------------

NESTING_TEMPLATES = [
    '{"chat_history": [{"role": "user", "content": "x", "deep": %s}]}',
    '[{"role": "user", "content": [{"type": "weird", "value": %s}]}]',
    '{"main_messages": [{"role": "user", "content": "x"}], "start_time": %s, "human_feedback": [{"score": %s}]}',
    '{"nodes": [{"node_id": "n", "message": {"author": {"role": "user", "metadata": %s}}}]}',
    '{"mapping": {"n": {"message": {"author": {"role": "user"}, "content": %s}}}}',
    '{"chat": {"history": {"messages": {"m": {"role": "assistant", "content": "x", "annotation": %s}}}}}',
    # The linear copy is compared with the active branch: nested as deep as the decoder goes, on both sides.
    '[{"chat": {"history": {"messages": {"m": {"role": "user", "x": %s}}}, "messages": [{"role": "user", "x": %s}]}}]',
    "%s",
]


@PARSERS
@given(
    template=st.sampled_from(NESTING_TEMPLATES),
    depth=st.integers(0, 3000),
    kind=st.sampled_from(["list", "dict"]),
)
@example(template=NESTING_TEMPLATES[0], depth=1490, kind="list")
@example(template=NESTING_TEMPLATES[5], depth=100_000, kind="list")
def test_whatever_the_decoder_accepts_parses_or_fails_with_a_parse_error(template: str, depth: int, kind: str) -> None:
    nested = ("[" * depth + "1" + "]" * depth) if kind == "list" else ('{"k":' * depth + "1" + "}" * depth)
    text = template.replace("%s", nested)
    try:
        document = jsonio.loads(text)
    except jsonio.NotStrictJson as error:
        assert "nested too deeply" in str(error)
        return

    exercise(document)


# --- ChatGPT's message_feedback.json --------------------------------------------------------------------------

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


# --- jsonio.loads: bytes --------------------------------------------------------------------------------------

DOCUMENTED_DECODE_ERRORS = (json.JSONDecodeError, UnicodeDecodeError, jsonio.NotStrictJson)


def check_decoded(data: bytes | str) -> Any:
    """Decode strictly: a value that JSON can hold, or a documented error."""
    try:
        value = jsonio.loads(data)
    except DOCUMENTED_DECODE_ERRORS as error:
        assert str(error)
        return error
    text = json.dumps(value, allow_nan=False)  # no NaN, no infinity
    # Encoded again, it decodes the same (json's own reading, where "\\ud800\\udc00" is one character).
    assert jsonio.loads(text) == json.loads(text)
    return value


@PARSERS
@given(data=st.binary(max_size=200))
@example(data=b"[" * 100_000)  # RecursionError
@example(data=b"1" * 5000)  # ValueError: over int's digit limit
@example(data=b"1e999")  # decoded to infinity
@example(data=b'{"a": -1e400}')
@example(data=b"\xef\xbb\xbf{}")  # UTF-8 byte order mark
@example(data=b'"\\ud800"')
@example(data=b"\xff\xfe")
def test_any_bytes_decode_to_strict_json_or_a_documented_error(data: bytes) -> None:
    check_decoded(data)


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    """JSON texts (in the encodings json detects), then corrupted: truncated, spliced, with odd numbers."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    data = text.encode(draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"])), "surrogatepass")
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(data)))
        insert = draw(
            st.one_of(
                st.binary(max_size=4),
                st.sampled_from([b"NaN", b"-Infinity", b"1e999", b"1" * 4400, b"[" * 2000, b"\\ud800", b"\x00", b","]),
            )
        )
        cut = draw(st.integers(0, 3))
        data = data[:position] + insert + data[position + cut :]
    return data


@PARSERS
@given(data=json_texts())
def test_corrupted_json_texts_decode_to_strict_json_or_a_documented_error(data: bytes) -> None:
    outcome = check_decoded(data)

    if not isinstance(outcome, ValueError):
        exercise(outcome)


@PARSERS
@given(value=json_values)
def test_json_texts_decode_as_json_reads_them(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert jsonio.loads(text.encode("utf-8", "surrogatepass")) == json.loads(text)


def test_every_parser_entry_point_is_fuzzed() -> None:
    dispatch = {
        name
        for name, value in vars(ingest).items()
        if inspect.isfunction(value) and value.__module__ == ingest.__name__ and not name.startswith("_")
    }
    entry_points = {f"{name}.parse" for name in MODULES} | dispatch | {"apply_message_feedback", "jsonio.loads"}

    assert entry_points == FUZZED_ENTRY_POINTS
