"""The input documents the round-trip tests run on, and the views they compare.

Cases are the hand-written documents of `documents.py` plus every conversation in the example documents of the
demo package (chats/demo/documents/<format>/) that the parser of that format accepts.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from chats.export import CAPABILITIES, FORMATS, active_path
from chats.formats.canonical import Conversation, Message, ParseError
from chats.ingest import parse_document
from chats.ingest.files import iter_items
from tests.factories.documents import valid_documents
from tests.factories.export_documents import DOCUMENTS


def input_cases() -> list[Any]:
    """`pytest.param(format, document, id=...)` for every document a parser accepts."""
    cases = [
        pytest.param(format, document, id=f"{format}/{name}")
        for format, documents in DOCUMENTS.items()
        for name, document in documents.items()
    ]
    for format in FORMATS:
        for path in valid_documents(format):
            # A whole conversations.json holds several conversations; each is one case.
            items = [item.document for item in iter_items(path)]
            for index, item in enumerate(items):
                try:
                    parse_document(item, format=format)
                except ParseError:
                    continue
                suffix = f"[{index}]" if len(items) > 1 else ""
                cases.append(pytest.param(format, item, id=f"{format}/{path.stem}{suffix}"))
    return cases


def format_pairs(cases: list[Any]) -> list[Any]:
    """Every case exported into every other format."""
    return [
        pytest.param(case.values[0], target, case.values[1], id=f"{case.id}->{target}")
        for case in cases
        for target in FORMATS
        if target != case.values[0]
    ]


# --- same-format comparison ---


def comparable(format: str, document: Any) -> Any:
    """The document with the differences a parse-then-export cannot avoid normalised away.

    - A top-level key holding null reads the same as an absent one; an id or title sent as a number reads as
      its decimal text.
    - Times keep their instant, not their spelling: "+08:00", naive, "Z" and epoch-seconds forms become UTC
      ISO text; ChatGPT's float seconds are compared to the millisecond.
    - chat_document `human_feedback`: entries the parser reads as "no feedback" (score 0 without a comment,
      or an invalid score) compare as null, trailing ones are dropped, and a list of nothing but those compares
      as absent (a Masterbrain document always gets one entry per main message back).
    - chat_graph nodes compare by node_id (the parser puts parents first).
    - ChatGPT's `conversation_id` duplicates `id`; the exporter always writes both.
    - Open WebUI's `chat.messages` is the active branch of `chat.history` again; an item without one compares as
      if it had that copy (the exporter always writes it, as Open WebUI does).
    """
    if not isinstance(document, dict):
        return document
    document = {key: value for key, value in copy.deepcopy(document).items() if value is not None}
    for key in ("chat_id", "user_id", "title", "conversation_id", "id"):
        if isinstance(document.get(key), int) and not isinstance(document[key], bool):
            document[key] = str(document[key])
    if format in ("chat_document", "record_qa"):
        for key in ("start_time", "end_time"):
            if key in document:
                document[key] = _instant(document[key])
    if format == "chat_document" and isinstance(document.get("human_feedback"), list):
        entries = [entry if _is_feedback(entry) else None for entry in document["human_feedback"]]
        while entries and entries[-1] is None:
            entries.pop()
        if entries:
            document["human_feedback"] = entries
        else:
            del document["human_feedback"]
    if format == "chat_graph" and isinstance(document.get("nodes"), list):
        document["nodes"] = {node["node_id"]: node for node in document["nodes"]}
    if format == "openwebui":
        _with_linear_copy(document)
    if format == "chatgpt_export":
        if document.get("conversation_id") == document.get("id"):
            document.pop("conversation_id", None)
        for key in ("create_time", "update_time"):
            if isinstance(document.get(key), int | float):
                document[key] = round(document[key], 3)
    return document


def _with_linear_copy(item: dict[str, Any]) -> None:
    """Give an Open WebUI item without `chat.messages` the copy of its active branch, walked up from currentId."""
    chat = item.get("chat")
    if not isinstance(chat, dict):
        return
    history = chat.get("history")
    if not isinstance(history, dict) or "messages" in chat:
        return
    messages, branch = history["messages"], []
    current = history.get("currentId")
    while current in messages:
        branch.append(messages[current])
        current = messages[current].get("parentId")
    chat["messages"] = branch[::-1]


def _instant(value: Any) -> Any:
    """A time as a UTC ISO string, however it was written (ISO with any offset or none, epoch seconds)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                return value
            # The parser reads a naive time as UTC.
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).isoformat()
    return value


def _is_feedback(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    score, comment = entry.get("score", 0), entry.get("additional")
    if isinstance(score, bool) or score not in (-1, 0, 1):
        return False
    return score != 0 or (isinstance(comment, str) and bool(comment.strip()))


# --- cross-format comparison ---

# Formats whose content is one string, with attachments beside it (Open WebUI's `files`, refusals in their own key):
# text parts come back as one, and attachments after it.
STRING_CONTENT_FORMATS = frozenset({"openwebui"})


def message_view(message: Message, target: str) -> dict[str, Any]:
    """What of a message `target` can carry, in a form that compares across formats."""
    can = CAPABILITIES[target]
    # An empty text part and no part at all are the same message in every format.
    parts = [part for part in message.parts if part != {"type": "text", "text": ""}]
    view: dict[str, Any] = {
        "role": message.role,
        "name": message.name,
        "text": message.text,
        "parts": _as_one_string(parts) if target in STRING_CONTENT_FORMATS else parts,
    }
    if can["reasoning"]:
        view["reasoning"] = message.reasoning
    if can["tool_calls"]:
        view["tool_calls"] = [(_call_id(call.call_id), call.name, call.arguments) for call in message.tool_calls]
        view["tool_call_id"] = _call_id(message.tool_call_id)
    if can["message_context"]:
        view["context_pairs"] = message.context_pairs
    if can["hidden"]:
        view["hidden"] = message.hidden
    if can["timestamps"] and message.created_at is not None:
        view["created_at"] = int(message.created_at.timestamp())
    return view


def _as_one_string(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts as a format with string content holds them: the texts joined (as `Message.text` joins them), then
    the attachments in order, then the refusals."""
    texts = [part["text"] for part in parts if part["type"] == "text"]
    attachments = [part for part in parts if part["type"] not in ("text", "refusal")]
    refusals = [part for part in parts if part["type"] == "refusal"]
    return ([{"type": "text", "text": "\n".join(texts)}] if texts else []) + attachments + refusals


def _call_id(call_id: str) -> str:
    # A legacy function_call's id is made from its message's key, which changes with the message's format.
    return "function_call:" if call_id.startswith("function_call:") else call_id


def messages_view(conversation: Conversation, target: str) -> Any:
    """The messages `target` holds: the active path for a linear format, the whole tree (by key) for a tree."""
    if CAPABILITIES[target]["branches"]:
        return {
            message.key: {"parent": message.parent_key, **message_view(message, target)}
            for message in conversation.messages
        }
    return [message_view(message, target) for message in active_path(conversation)]


def artifacts_view(conversation: Conversation, target: str) -> list[tuple[str, str, bool, bool]]:
    messages = conversation.messages if CAPABILITIES[target]["branches"] else active_path(conversation)
    exported = {m.key for m in messages}
    return sorted(
        (a.kind, a.artifact_id, a.requested, a.resolved) for a in conversation.artifacts if a.message_key in exported
    )


def feedback_view(conversation: Conversation, target: str) -> list[tuple[int, int | None, str]]:
    """Per-message feedback by the message's place on the active path (keys change with the format)."""
    if not CAPABILITIES[target]["feedback"]:
        return []
    place = {m.key: index for index, m in enumerate(active_path(conversation))}
    return sorted((place[f.message_key], f.score, f.comment) for f in conversation.feedback if f.message_key in place)


def fields_view(conversation: Conversation, target: str) -> dict[str, Any]:
    """The conversation-level fields `target` can carry."""
    can = CAPABILITIES[target]
    view: dict[str, Any] = {}
    if can["external_id"]:
        view["external_id"] = conversation.external_id
    if can["title"]:
        view["title"] = conversation.title
    if can["user"]:
        view["user_id"] = conversation.user_id
    if can["model"]:
        view["model_name"] = conversation.model_name
    if can["times"]:
        view["times"] = [
            round(moment.timestamp(), 3) if moment else None
            for moment in (conversation.started_at, conversation.ended_at)
        ]
    if can["scenario"]:
        view["scenario"] = conversation.scenario
    if can["conversation_context"]:
        view["context_pairs"] = conversation.context_pairs
    return view
