"""What each output format can hold, and the notes an export makes about what it had to leave out.

The same table drives `ExportResult.omitted` and picks the format pairs the round-trip tests check, so the two
cannot drift apart.
"""

from __future__ import annotations

from chats.formats.canonical import Conversation, Message

from .common import active_path, goes_out_raw, off_path_note, top_level_metadata

CAPABILITY_NAMES = (
    "branches",  # more than one path through the tree
    "tool_calls",  # tool calls with id, name and arguments, and the tool messages answering them
    "artifacts",  # injected artifacts (they live in injection tool calls and their results)
    "feedback",  # per-message scores imported with the data
    "reasoning",  # reasoning kept apart from the answer
    "message_context",  # `[key, value]` context pairs on a message
    "conversation_context",  # `[key, value]` context pairs on the conversation
    "injection_context",  # the Record QA `context` block
    "scenario",  # the workflow scenario and the messages given to the model before the main ones
    "timestamps",  # a time on each message
    "author_metadata",  # the metadata of a message's author (chat_graph and ChatGPT `author.metadata`)
    "message_ids",  # each message's own id in the input (`Message.input_id`: a node id, a mapping id)
    "hidden",  # messages hidden from the user
    "external_id",  # the conversation's own id
    "title",
    "user",
    "model",
    "times",  # the conversation's start and end time
    "metadata",  # every other top-level key, verbatim
)

# Every format holds tool calls (and so injected artifacts) and reasoning; a row names what else it holds.
_EVERY_FORMAT = ("tool_calls", "artifacts", "reasoning")
# What a format that keeps the conversation's own fields holds of them.
_CONVERSATION_FIELDS = ("external_id", "title", "user", "model", "times", "metadata")
# What a tree format holds of each node besides its content.
_TREE = ("branches", "timestamps", "message_ids")


def _holds(*names: str) -> dict[str, bool]:
    """One row of `CAPABILITIES`: every capability in `CAPABILITY_NAMES` order, true for `names` and `_EVERY_FORMAT`."""
    unknown = set(names) - set(CAPABILITY_NAMES)
    if unknown:
        raise ValueError(f"unknown capabilities: {sorted(unknown)}")
    held = {*_EVERY_FORMAT, *names}
    return {name: name in held for name in CAPABILITY_NAMES}


CAPABILITIES: dict[str, dict[str, bool]] = {
    "openai": _holds(),
    "chat_document": _holds("feedback", "scenario", *_CONVERSATION_FIELDS),
    "record_qa": _holds("feedback", "scenario", "injection_context", *_CONVERSATION_FIELDS),
    "chat_history": _holds("message_context", "conversation_context", "external_id", "metadata"),
    "chat_graph": _holds(*_TREE, "message_context", "author_metadata", "external_id", "metadata"),
    "chatgpt_export": _holds(*_TREE, "author_metadata", "hidden", "external_id", "title", "model", "times", "metadata"),
    "openwebui": _holds(*_TREE, "feedback", *_CONVERSATION_FIELDS),
}

# Where a format keeps something in a non-native place, the note says so instead of calling it lost.
# (Tool calls, their results, reasoning and so injected artifacts are not among these: chat_graph and openwebui
# carry them as OpenAI-style keys of a message and chatgpt_export in a message's metadata, and the parsers read
# them back.)
_KEPT_ELSEWHERE: dict[tuple[str, str], str] = {
    ("chatgpt_export", "message_context"): "message context pairs (kept in message metadata)",
    ("openwebui", "message_context"): "message context pairs (kept in a message's `context` key)",
}


# What a format calls the ids of its messages, for the note that a format without them drops them.
_ID_KINDS = {"chat_graph": "node ids", "chatgpt_export": "mapping ids", "openwebui": "Open WebUI message ids"}


def _note(target: str, capability: str, text: str) -> str:
    return _KEPT_ELSEWHERE.get((target, capability), text)


def _messages(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"


def omitted_notes(conversation: Conversation, target: str, exported: list[Message]) -> list[str]:
    """Human-readable notes of what `conversation` holds and `target` cannot.

    `exported` is what the exporter wrote: the active path for a linear format, every message for a tree. A
    message that goes out exactly as received loses nothing, so only rebuilt ones are checked for content the
    target cannot hold.
    """
    can = CAPABILITIES[target]
    rebuilt = [m for m in exported if not goes_out_raw(conversation, m, target)]
    notes: list[str] = []
    if not can["branches"]:
        note = off_path_note(conversation, active_path(conversation))
        if note:
            notes.append(note)

    if not can["tool_calls"] and any(m.tool_calls or m.tool_call_id for m in rebuilt):
        notes.append(_note(target, "tool_calls", "tool calls"))
    rebuilt_keys = {m.key for m in rebuilt}
    if not can["artifacts"] and any(a.message_key in rebuilt_keys for a in conversation.artifacts):
        notes.append(_note(target, "artifacts", "injected artifacts"))
    if not can["reasoning"] and any(m.reasoning for m in rebuilt):
        notes.append(_note(target, "reasoning", "reasoning"))
    if not can["message_context"] and any(m.context_pairs for m in rebuilt):
        notes.append(_note(target, "message_context", "message context pairs"))
    if not can["timestamps"] and any(m.created_at is not None for m in rebuilt):
        notes.append(_note(target, "timestamps", "message timestamps"))
    if not can["author_metadata"]:
        count = sum(1 for m in rebuilt if m.author_metadata)
        if count:
            notes.append(f"author metadata of {_messages(count)}")
    if not can["message_ids"]:
        count = sum(1 for m in rebuilt if m.input_id)
        if count:
            kind = _ID_KINDS.get(conversation.format)
            notes.append(f"message ids of {_messages(count)}" + (f" ({kind})" if kind else ""))
    if not can["hidden"] and any(m.hidden for m in rebuilt):
        notes.append(_note(target, "hidden", "hidden flags (hidden messages exported as visible)"))
    if not can["scenario"] and any(m.section == "scenario" for m in exported):
        notes.append("scenario section (scenario messages exported as ordinary messages)")

    notes.extend(_feedback_notes(conversation, target, exported))

    for capability, present, text in (
        ("conversation_context", bool(conversation.context_pairs), "conversation context pairs"),
        ("injection_context", conversation.injection_context is not None, "injection context"),
        ("scenario", conversation.scenario is not None, "scenario"),
        ("external_id", bool(conversation.external_id), "conversation id"),
        ("title", bool(conversation.title), "title"),
        ("user", bool(conversation.user_id), "user id"),
        ("model", conversation.model is not None or bool(conversation.model_name), "model"),
        ("times", conversation.started_at is not None or conversation.ended_at is not None, "start/end time"),
    ):
        if present and not can[capability]:
            notes.append(_note(target, capability, text))
    metadata = top_level_metadata(conversation)
    if metadata and not can["metadata"]:
        keys = ", ".join(sorted(metadata))
        notes.append(f"top-level keys: {keys}")
    return notes


def _feedback_notes(conversation: Conversation, target: str, exported: list[Message]) -> list[str]:
    if not conversation.feedback:
        return []
    if not CAPABILITIES[target]["feedback"]:
        return [f"feedback ({len(conversation.feedback)})"]
    notes: list[str] = []
    exported_keys = {m.key for m in exported if m.section != "scenario"}
    whole = [f for f in conversation.feedback if f.message_key is None]
    stray = [f for f in conversation.feedback if f.message_key is not None and f.message_key not in exported_keys]
    if whole:
        notes.append(f"conversation-level feedback ({len(whole)})")
    if stray:
        notes.append(f"feedback on messages not exported ({len(stray)})")
    return notes
