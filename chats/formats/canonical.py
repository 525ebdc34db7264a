"""The canonical form every input format is parsed into, and every export is made from.

Plain dataclasses: no ORM, no Django. A parser turns decoded JSON into a ``Conversation``; the ingest service
stores it; the exporters turn a ``Conversation`` (read back from the database or straight from a parser) into
each output format.

Parts are plain dicts with a ``type`` key, one of ``PART_TYPES``::

    {"type": "text", "text": "..."}
    {"type": "image", "url": "https://... or data:...", "detail": "auto"}      # detail optional
    {"type": "audio", "data": "<base64>", "format": "wav"}                      # or {"type": "audio", "url": ...}
    {"type": "file", "file_id": "...", "file_data": "...", "filename": "..."}  # any of the three
    {"type": "refusal", "refusal": "..."}
    {"type": "unknown", "raw": <the part exactly as received>}

A message keeps ``raw``, the message object exactly as received, so that nothing a client sent is lost and
exporting in the format a conversation came in can give the same document back.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

FORMATS = ("openai", "chat_document", "record_qa", "chat_history", "chat_graph", "chatgpt_export", "openwebui")

PART_TYPES = ("text", "image", "audio", "file", "refusal", "unknown")

# Feedback origins for feedback that arrives with the data (reviewer feedback is made in the application).
FEEDBACK_ORIGIN_MASTERBRAIN = "masterbrain"
FEEDBACK_ORIGIN_CHATGPT = "chatgpt"
FEEDBACK_ORIGIN_OPENWEBUI = "openwebui"

ARTIFACT_KINDS = ("protocol", "record", "discussion", "file", "other")

# The keys a conversation id is found under, in order of preference (design notes §3, rule 1).
ID_KEYS = ("chat_id", "conversation_id", "id", "thread_id")


@dataclass(frozen=True, slots=True)
class Issue:
    """A warning or an error found while parsing, located by a JSON pointer into the document."""

    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class ParseError(Exception):
    """The document cannot be stored meaningfully. Carries every error found, each with a JSON path."""

    def __init__(self, errors: list[Issue]):
        self.errors = errors
        super().__init__("; ".join(f"{e.path or '/'}: {e.message}" for e in errors))


class Issues:
    """The warnings and errors found while parsing one document."""

    __slots__ = ("errors", "warnings")

    def __init__(self) -> None:
        self.warnings: list[Issue] = []
        self.errors: list[Issue] = []

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(Issue(path, message))

    def error(self, path: str, message: str) -> None:
        self.errors.append(Issue(path, message))

    def raise_errors(self) -> None:
        if self.errors:
            raise ParseError(self.errors)


@dataclass(slots=True)
class ToolCall:
    call_id: str  # as given; legacy function_call gets a synthetic "function_call:<message key>"
    type: str  # "function", "custom", "function_call" (legacy), or any other string as given
    name: str
    arguments: str  # exactly as sent ("" when absent); for custom calls the `input`
    parsed_arguments: Any = None  # the decoded arguments when `arguments` is valid JSON
    arguments_error: str = ""  # why `arguments` is not valid JSON ("" when it is, or when it is empty)
    index: int = 0  # position among the message's calls
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys of the call object, verbatim


@dataclass(slots=True)
class Message:
    key: str  # identity inside the conversation: the input's node/message id, or a chain hash (see chain_key)
    role: str  # as given
    parent_key: str | None = None
    # The input's own id for this message (a chat_graph node id, a ChatGPT mapping id, an Open WebUI message id);
    # "" when the format has none. Matched against the ids a stored message is known by (its aliases).
    input_id: str = ""
    # The path of contents from the root to this message (see content_key); set by the linear parsers, and by
    # the planner for the others.
    content_key: uuid.UUID | None = None
    name: str = ""
    parts: list[dict[str, Any]] = field(default_factory=list)
    content_is_null: bool = False  # `content: null` (as opposed to "" or a list)
    content_is_string: bool = True  # content was a plain string (so it exports back as one)
    text: str = ""  # plain-text rendering of the parts, for search and excerpts
    reasoning: str = ""  # reasoning_content or inline <think>...</think>, kept apart from the answer
    context_pairs: list[list[str]] = field(default_factory=list)
    author_metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None  # aware, UTC
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""  # for tool (and legacy function) messages: the call this answers
    hidden: bool = False  # e.g. ChatGPT weight 0 / visually hidden
    recipient: str = ""  # ChatGPT: "all" or a tool name such as "python"
    section: str = "main"  # "main", or "scenario" for messages given to the model before the main ones
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys of the message, verbatim
    raw: Any = None  # the message (or graph node) exactly as received
    source_path: str = ""  # JSON pointer of the message in the document, for errors and warnings


@dataclass(slots=True)
class Artifact:
    kind: str  # one of ARTIFACT_KINDS
    artifact_id: str  # as given, never split
    id_well_formed: bool
    tool_call_id: str  # the call that injected it
    message_key: str  # the assistant message holding that call
    tool_name: str
    requested: bool  # named in the call's arguments
    resolved: bool  # present in the answering tool message's result
    payload: Any = None  # the resolved item, verbatim


@dataclass(slots=True)
class Feedback:
    origin: str  # FEEDBACK_ORIGIN_*
    message_key: str | None  # None: the whole conversation
    score: int | None  # -1, 0, 1 (None when not given)
    comment: str = ""
    raw: Any = None


@dataclass(slots=True)
class Conversation:
    format: str  # one of FORMATS
    messages: list[Message]  # parents always before their children
    external_id: str | None = None
    title: str = ""
    user_id: str = ""
    model_name: str = ""
    model: Any = None  # the model as given: a string, an object such as {"name":..., "enable_thinking":...}
    started_at: datetime | None = None
    ended_at: datetime | None = None
    scenario: Any = None  # workflow context, any JSON
    injection_context: Any = None  # the Record QA `context` object
    context_pairs: list[list[str]] = field(default_factory=list)  # chat_history top-level `context`
    metadata: dict[str, Any] = field(default_factory=dict)  # every other top-level key, verbatim
    # Timestamps exactly as the input wrote them ({"start_time": "2025-03-01T10:00:00+08:00"}), so that an export
    # gives back the original offset (the database keeps instants in UTC).
    original_times: dict[str, Any] = field(default_factory=dict)
    active_leaf_key: str | None = None  # None: the last message of `messages`
    artifacts: list[Artifact] = field(default_factory=list)
    feedback: list[Feedback] = field(default_factory=list)
    # The origins whose feedback the document states in full for its messages (a Masterbrain human_feedback
    # list): stored feedback of such an origin that the document no longer states is withdrawn.
    feedback_origins: list[str] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)


def canonical_json(value: object) -> str:
    """A stable JSON text of a value: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def own_digest(message: Message) -> bytes:
    """What a message says, apart from where it stands: its role, name, parts, reasoning and tool calls.

    Call ids are left out (producers make them up per run), and so is everything a format keeps beside the
    content (timestamps, unknown keys), so that one message logged in two formats has one digest.
    """
    calls = [[call.type, call.name, call.arguments] for call in message.tool_calls]
    value = [message.role, message.name, message.parts, message.reasoning, calls]
    return hashlib.sha256(_canonical_bytes(value, strings_only=_strings_only(message.parts))).digest()


def _strings_only(parts: list[dict[str, Any]]) -> bool:
    """Whether every value of every part is a string (text parts, image URLs): then so is everything `own_digest`
    encodes, since roles, names, reasoning and a call's type, name and arguments are strings."""
    return all(type(value) is str for part in parts for value in part.values())


def _canonical_bytes(value: object, *, strings_only: bool) -> bytes:
    """`canonical_json` of ``value`` in UTF-8. A value made of strings, lists and objects of strings is written by
    orjson, whose text for those is byte for byte the standard library's with sorted keys and unicode kept (its
    numbers are not: 1e-07 is 1e-7 there, so anything holding a number takes the standard library).
    surrogatepass: a lone surrogate ("\ud800" in the JSON) has no UTF-8 form; orjson refuses it and the service
    refuses such documents, but the parser must still give them a key rather than fail."""
    if strings_only:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass
    return canonical_json(value).encode(errors="surrogatepass")


def content_key(parent: uuid.UUID | None, message: Message) -> uuid.UUID:
    """Identity of a message by content: a digest of its parent's content key and its own content.

    A key stands for the whole path from the root, so the same history always gives the same keys: a resent
    history is recognised, a longer one appends, one that differs after some message branches from the last
    common message, and a document without an id finds the conversation it continues.
    """
    digest = hashlib.sha256(parent.bytes if parent is not None else b"\x00")
    digest.update(own_digest(message))
    return uuid.UUID(bytes=digest.digest()[:16])


def chain_key(content: uuid.UUID) -> str:
    """The key of a message of a linear history, which has no id of its own: its content key."""
    return "h:" + content.hex
