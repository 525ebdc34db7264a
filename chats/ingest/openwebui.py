"""Open WebUI's "Export chats": a JSON array of chat items, or one item (the API's shape).

An item is ``{id, user_id, title, chat: {id, title, models, params, history: {messages, currentId}, messages,
tags, timestamp, files}, created_at, updated_at, share_id, archived, pinned, meta, folder_id}``. The conversation
is a tree in ``chat.history.messages`` (message id -> ``{id, parentId, childrenIds, role, content, timestamp,
...}``); ``parentId`` links it (``childrenIds`` only repeats those links) and ``currentId`` is the active leaf.
``chat.messages`` is a copy of the active branch that Open WebUI keeps beside the tree: it is dropped when it is
exactly that copy (an export writes it again), else kept verbatim.

Content is a string. Reasoning is inlined in an assistant's content as ``<details type="reasoning" ...>`` blocks,
a ``<summary>`` line and the reasoning quoted with ``> `` (HTML-escaped by newer versions); it is taken apart
from the answer. Other ``<details>`` blocks (tool calls, code interpreter) stay in the answer's text. Images and
documents attached to a message are in its ``files``; they become parts after the text. A thumbs rating is the
message's ``annotation``: ``{rating: 1 | -1, reason, comment, tags, details}``.

Open WebUI has no place for tool calls, their results or refusals: conversations exported into this format by
this application carry them as OpenAI-style keys of a message (``tool_calls``, ``tool_call_id``, ``refusal``,
``name``), read by the openai parser's rules. Those keys are not Open WebUI's own, so one that cannot be read is a
warning, never an error.

Top-level keys other than ``id``, ``user_id``, ``title``, ``chat``, ``created_at`` and ``updated_at`` are kept
verbatim in ``metadata``; so are the ``chat`` object's keys that no field holds, under ``metadata["chat"]``
(``models`` among them: the model is the first of the chat's models).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from chats.formats.canonical import (
    FEEDBACK_ORIGIN_OPENWEBUI,
    Conversation,
    Feedback,
    Issues,
    Message,
    canonical_json,
)
from chats.formats.openai_messages import OPENAI_STYLE_KEYS
from chats.formats.openwebui import (
    ANNOTATION_KEY,
    MESSAGE_KEYS,
    METADATA_CHAT_KEY,
    RATINGS,
    REASONING_OPEN,
    split_reasoning,
)
from chats.formats.times import parse_timestamp
from chats.ingest.chat_graph import OpenAIStyleKeys
from chats.ingest.common import (
    external_id,
    extract_inline_reasoning,
    optional_text,
    original_times,
    parents_first,
    parse_export_item,
    pointer,
    require_messages,
    shape_error,
    unmapped_keys,
)
from chats.ingest.injections import extract_artifacts
from chats.ingest.parts import content_parts, render_text
from chats.json_types import JSONMapping, JSONObject

NAME = "openwebui"
EXPECTS = "an object with a 'chat' object whose 'history' has a 'messages' object (or an array of them)"

MESSAGES_PATH = "/chat/history/messages"
# The top-level keys read into fields; every other one is kept in metadata.
_MAPPED = frozenset({"id", "user_id", "title", "chat", "created_at", "updated_at"})
# The `chat` keys read into fields; the others (`models` among them: a list of which the first is read) are kept
# in metadata["chat"].
_CHAT_MAPPED = frozenset({"history", "messages"})
_HISTORY_MAPPED = frozenset({"messages", "currentId"})


def matches(document: object) -> bool:
    if isinstance(document, list):
        return is_conversation_list(document)
    return is_chat_item(document)


def is_chat_item(document: object) -> bool:
    """An Open WebUI chat item: an object whose ``chat.history.messages`` is an object."""
    if not isinstance(document, dict):
        return False
    chat = document.get("chat")
    history = chat.get("history") if isinstance(chat, dict) else None
    return isinstance(history, dict) and isinstance(history.get("messages"), dict)


def is_conversation_list(document: Sequence[object]) -> bool:
    """Whether a JSON array is a whole Open WebUI export (judged by its first item)."""
    return bool(document) and is_chat_item(document[0])


def parse(document: Any) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    return parse_export_item(document, lambda item: _Parser(item).parse(), export="Open WebUI export", items="chats")


class _Parser:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.issues = Issues()
        self.feedback: list[Feedback] = []
        # Reads the OpenAI-style keys into issues of its own, drained after every message: they are warnings here.
        self.openai_keys = OpenAIStyleKeys(Issues())

    def parse(self) -> Conversation:
        document, issues = self.document, self.issues
        chat: dict[str, Any] = document["chat"]
        history: dict[str, Any] = chat["history"]
        raw_messages: dict[str, Any] = history["messages"]
        metadata = unmapped_keys(document, _MAPPED)
        conversation_id = external_id(document.get("id"), "/id", issues)

        by_key: dict[str, Message] = {}
        for message_id, raw in raw_messages.items():
            message = self._read_message(message_id, raw)
            if message is not None:
                by_key[message_id] = message
        parent_of: dict[str, str | None] = {}
        for key, message in by_key.items():
            parent = message.parent_key
            if parent is not None and parent not in by_key:
                if parent not in raw_messages:  # an unreadable parent has its own error already
                    issues.warn(
                        f"{message.source_path}/parentId", f"parent '{parent}' is not a message; treated as a root"
                    )
                parent = message.parent_key = None
            parent_of[key] = parent
        ordered, in_cycle = parents_first(parent_of)
        for key in in_cycle:
            issues.error(pointer(MESSAGES_PATH, key, "parentId"), f"message '{key}' is in or under a cycle of parents")
        issues.raise_errors()
        messages = [by_key[key] for key in ordered]
        require_messages(messages, MESSAGES_PATH)
        self.openai_keys.link(messages)
        self._drain_openai_key_issues()
        artifacts, artifact_warnings = extract_artifacts(messages)

        active_leaf = self._active_leaf(history.get("currentId"), by_key, parent_of)
        chat_rest = self._chat_rest(chat, history, _branch(active_leaf, by_key))
        if chat_rest:
            metadata[METADATA_CHAT_KEY] = chat_rest
        models = chat.get("models")
        first_model = models[0] if isinstance(models, list) and models else None
        return Conversation(
            format=NAME,
            messages=messages,
            external_id=conversation_id,
            title=self._text("title", metadata) or self._chat_title(chat),
            user_id=self._text("user_id", metadata),
            model_name=first_model if isinstance(first_model, str) else "",
            model=first_model if isinstance(first_model, str) else None,
            started_at=self._time("created_at", metadata),
            ended_at=self._time("updated_at", metadata),
            metadata=metadata,
            original_times=original_times(document, ("created_at", "updated_at")),
            active_leaf_key=active_leaf,
            artifacts=artifacts,
            feedback=self.feedback,
            # Each message carries its rating or none: one no longer rated has lost its rating.
            feedback_origins=[FEEDBACK_ORIGIN_OPENWEBUI],
            warnings=issues.warnings + artifact_warnings,
        )

    # --- top level ---

    def _text(self, key: str, metadata: JSONObject) -> str:
        """A string field ("" when absent); a value that is not text is kept in metadata."""
        text = optional_text(self.document.get(key), f"/{key}", self.issues)
        if text is None:
            metadata[key] = self.document[key]
            return ""
        return text

    def _chat_title(self, chat: JSONMapping) -> str:
        # Only when the item has no title of its own: Open WebUI writes both, and the item's is the one it shows.
        title = chat.get("title")
        return title if "title" not in self.document and isinstance(title, str) else ""

    def _time(self, key: str, metadata: JSONObject) -> datetime | None:
        value = self.document.get(key)
        moment = parse_timestamp(value, f"/{key}", self.issues)
        if moment is None and value is not None:
            metadata[key] = value  # not a time: kept as it came
        return moment

    def _chat_rest(self, chat: JSONMapping, history: JSONMapping, branch: list[Message]) -> JSONObject:
        """The `chat` keys no field holds, verbatim; its linear `messages` only when not a copy of ``branch``."""
        rest = unmapped_keys(chat, _CHAT_MAPPED)
        if "messages" in chat and not _is_copy_of(chat["messages"], branch):
            rest["messages"] = chat["messages"]
        history_rest = unmapped_keys(history, _HISTORY_MAPPED)
        if history_rest:
            rest["history"] = history_rest
        return rest

    def _active_leaf(self, current: object, by_key: dict[str, Message], parent_of: dict[str, str | None]) -> str | None:
        if isinstance(current, str) and current in by_key:
            return current
        if current is not None:
            self.issues.warn(
                "/chat/history/currentId", f"currentId {current!r} is not a message; the latest leaf is used"
            )
        return _latest_leaf(by_key, parent_of)

    # --- messages ---

    def _read_message(self, message_id: str, raw: Any) -> Message | None:
        path = pointer(MESSAGES_PATH, message_id)
        issues = self.issues
        if not message_id:  # a message's key: "" would read as "no parent" wherever it is a parent
            issues.error(path, "a message id must be a non-empty string")
            return None
        if not isinstance(raw, dict):
            issues.error(path, "a message must be an object")
            return None
        role = raw.get("role")
        if not isinstance(role, str) or not role:
            issues.error(f"{path}/role", "a message needs a role (a non-empty string)")
            return None
        parent = raw.get("parentId")
        if parent is not None and not isinstance(parent, str):
            issues.error(f"{path}/parentId", "parentId must be a message id or null")
            return None
        own_id = raw.get("id")
        if own_id is not None and own_id != message_id:
            issues.warn(f"{path}/id", f"the message's id {own_id!r} differs from its key; the key is used")

        extra = {key: value for key, value in raw.items() if key not in MESSAGE_KEYS and key not in OPENAI_STYLE_KEYS}
        content = raw.get("content")
        parts = content_parts(content, f"{path}/content", issues)
        reasoning = ""
        if role == "assistant":
            parts, reasoning = extract_inline_reasoning(parts, marker=REASONING_OPEN, split=split_reasoning)
        parts.extend(self._file_parts(raw.get("files"), f"{path}/files", extra))
        message = Message(
            key=message_id,
            input_id=message_id,
            role=role,
            parent_key=parent,
            parts=parts,
            content_is_null=content is None,
            content_is_string=isinstance(content, str),
            text=render_text(parts),
            reasoning=reasoning,
            created_at=parse_timestamp(raw.get("timestamp"), f"{path}/timestamp", issues),
            raw=raw,
            source_path=path,
        )
        if any(key in raw for key in OPENAI_STYLE_KEYS):
            self.openai_keys.read(message, raw, path, extra)
            self._drain_openai_key_issues()
        if ANNOTATION_KEY in raw and self._read_rating(message, raw[ANNOTATION_KEY], f"{path}/{ANNOTATION_KEY}"):
            del extra[ANNOTATION_KEY]
        message.extra = extra
        return message

    def _drain_openai_key_issues(self) -> None:
        found = self.openai_keys.issues
        self.issues.warnings.extend(found.warnings)
        for error in found.errors:
            self.issues.warn(error.path, f"{error.message}; ignored")
        found.warnings.clear()
        found.errors.clear()

    def _file_parts(self, files: Any, path: str, extra: dict[str, Any]) -> list[dict[str, Any]]:
        if files is None:
            return []
        if not isinstance(files, list):
            self.issues.warn(path, "files must be a list; kept in extra")
            extra["files"] = files
            return []
        parts = []
        for index, entry in enumerate(files):
            if not isinstance(entry, dict):
                self.issues.warn(pointer(path, index), "a file must be an object; kept as an unknown part")
            parts.append(file_part(entry))
        return parts

    def _read_rating(self, message: Message, annotation: object, path: str) -> bool:
        """Feedback from the message's annotation; False when it holds none (it then stays in extra)."""
        if not isinstance(annotation, dict):
            if annotation is not None:
                self.issues.warn(path, "annotation must be an object; kept in extra")
            return False
        rating = annotation.get("rating")
        comment = _annotation_comment(annotation)
        if isinstance(rating, bool) or rating not in (*RATINGS, None):
            self.issues.warn(
                f"{path}/rating", f"rating must be 1 or -1, not {rating!r}; the annotation is kept in extra"
            )
            return False
        if rating is None and not comment:
            return False  # tags or a 1-10 score without thumbs: not a rating
        self.feedback.append(
            Feedback(
                origin=FEEDBACK_ORIGIN_OPENWEBUI,
                message_key=message.key,
                score=int(rating) if rating is not None else None,
                comment=comment,
                raw=annotation,
            )
        )
        return True


def _annotation_comment(annotation: JSONMapping) -> str:
    """The free text of a rating: the comment, else the reason picked from Open WebUI's list."""
    for key in ("comment", "reason"):
        value = annotation.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _is_copy_of(linear: object, branch: list[Message]) -> bool:
    """Whether ``linear`` is the branch's messages as received, value for value (as JSON: 1, 1.0 and true differ)."""
    if not isinstance(linear, list) or len(linear) != len(branch):
        return False
    try:
        return all(
            canonical_json(item) == canonical_json(message.raw) for item, message in zip(linear, branch, strict=True)
        )
    except RecursionError:  # nesting deeper than the encoder goes: keep it verbatim
        return False


def _branch(leaf: str | None, by_key: dict[str, Message]) -> list[Message]:
    """The messages from the root to ``leaf`` (the parsers place no cycle)."""
    path: list[Message] = []
    while leaf is not None:
        message = by_key[leaf]
        path.append(message)
        leaf = message.parent_key
    path.reverse()
    return path


def _latest_leaf(by_key: dict[str, Message], parent_of: dict[str, str | None]) -> str | None:
    """The leaf with the latest timestamp (ties and missing timestamps: the later one in the document)."""
    parents = set(parent_of.values())
    leaves = [(index, message) for index, message in enumerate(by_key.values()) if message.key not in parents]
    if not leaves:
        return None
    _, latest = max(
        leaves,
        key=lambda item: (
            item[1].created_at is not None,
            item[1].created_at.timestamp() if item[1].created_at else 0.0,
            item[0],
        ),
    )
    return latest.key


# --- files --------------------------------------------------------------------------------------------------


def file_part(entry: Any) -> dict[str, Any]:
    """A canonical part from an entry of a message's ``files``; an entry of another kind is kept whole."""
    if isinstance(entry, dict):
        kind = entry.get("type")
        if kind == "image" and isinstance(entry.get("url"), str):
            image: dict[str, Any] = {"type": "image", "url": entry["url"]}
            if isinstance(entry.get("detail"), str):
                image["detail"] = entry["detail"]
            return image
        if kind == "audio":
            audio = {key: entry[key] for key in ("data", "url", "format") if isinstance(entry.get(key), str)}
            if "data" in audio or "url" in audio:
                return {"type": "audio", **audio}
        if kind == "file":
            names = {"file_id": entry.get("id"), "filename": entry.get("name"), "file_data": entry.get("file_data")}
            fields = {key: value for key, value in names.items() if isinstance(value, str)}
            if fields:
                return {"type": "file", **fields}
    return {"type": "unknown", "raw": entry}
