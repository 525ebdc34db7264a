"""What every parser entry point promises, checked by the fuzz tests of the parsers (tests/fuzz/test_parsers.py and
tests/fuzz/test_<format>_parser.py): whatever JSON arrives, the only failure is a ParseError that points into the
document, and whatever parses satisfies the promises of ``chats/formats/canonical.py``. ``exercise`` calls every entry
point on one document and checks each outcome."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from hypothesis import settings

from chats import ingest
from chats.formats.canonical import (
    ARTIFACT_KINDS,
    FORMATS,
    PART_TYPES,
    Conversation,
    Issue,
    Message,
    ParseError,
    canonical_json,
)
from chats.formats.openwebui import METADATA_CHAT_KEY
from chats.ingest import chat_document, chat_graph, chat_history, chatgpt_export, openai, openwebui, record_qa

PARSERS = settings.get_profile("fuzz-parsers")

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
            if format_name == "openwebui" and key == METADATA_CHAT_KEY:
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
    kept = conversation.metadata.get(METADATA_CHAT_KEY, {})
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


def unrooted(parent_of: dict[str, str | None]) -> set[str]:
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


def check_orphan_results(conversation: Conversation) -> None:
    """A result naming a call that no message makes is kept, flagged as an orphan at the result's message."""
    calls = {call.call_id for message in conversation.messages for call in message.tool_calls}
    orphan_paths = {w.path for w in conversation.warnings if w.message.startswith("orphan result")}
    for message in conversation.messages:
        if message.tool_call_id and message.tool_call_id not in calls:
            assert message.source_path in orphan_paths, message.source_path
