"""Masterbrain chat documents: a message history wrapped in metadata, with human feedback aligned to messages.

Two shapes: ``{chat_id, ..., scenario_messages, main_messages, human_feedback}`` and the shorter
``{chat_id, user_id, model, history | messages, scenario}``. Record QA documents (``record_qa``) are the same
wrapper with a ``context`` block, and are parsed here too.
"""

from __future__ import annotations

from typing import TypeGuard

from chats.formats.canonical import FEEDBACK_ORIGIN_MASTERBRAIN, Conversation, Feedback, Issues, Message
from chats.formats.times import parse_timestamp
from chats.ingest.common import explicit_id, optional_text, original_times, require_messages, shape_error, unmapped_keys
from chats.ingest.injections import extract_artifacts
from chats.ingest.openai import MessageChain
from chats.json_types import JSONMapping, JSONObject

NAME = "chat_document"
EXPECTS = "an object with a 'main_messages', 'messages' or 'history' list"

# Where the main messages are, by preference; a document rarely has more than one.
MESSAGE_LIST_KEYS = ("main_messages", "messages", "history")
_SCORES = frozenset({-1, 0, 1})


def matches(document: object) -> TypeGuard[JSONObject]:
    return isinstance(document, dict) and any(isinstance(document.get(key), list) for key in MESSAGE_LIST_KEYS)


def parse(document: object) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    return parse_wrapped(document, format_name=NAME)


def parse_wrapped(document: JSONMapping, *, format_name: str, context_key: str | None = None) -> Conversation:
    """Parse a wrapper document; ``context_key`` names the key holding the Record QA injection context."""
    issues = Issues()
    list_key = next(key for key in MESSAGE_LIST_KEYS if isinstance(document.get(key), list))
    mapped = {"chat_id", "user_id", "title", "model", "start_time", "end_time", "scenario", list_key}

    chain = MessageChain(issues)
    if document.get("scenario_messages") is not None:
        mapped.add("scenario_messages")
        chain.add(document["scenario_messages"], path="/scenario_messages", section="scenario")
    chain.add(document[list_key], path=f"/{list_key}", section="main")
    conversation_id = explicit_id(document, issues)
    messages = chain.finish()
    require_messages(messages, f"/{list_key}")

    conversation = Conversation(format=format_name, messages=messages, external_id=conversation_id)
    for key in ("user_id", "title"):
        value = optional_text(document.get(key), f"/{key}", issues)
        if value is None:
            mapped.discard(key)
        else:
            setattr(conversation, key, value)
    if not _read_model(conversation, document.get("model"), issues):
        mapped.discard("model")
    conversation.started_at = parse_timestamp(document.get("start_time"), "/start_time", issues)
    conversation.ended_at = parse_timestamp(document.get("end_time"), "/end_time", issues)
    conversation.original_times = original_times(document, ("start_time", "end_time"))
    conversation.scenario = document.get("scenario")
    if context_key is not None:
        mapped.add(context_key)
        conversation.injection_context = document.get(context_key)
    if "human_feedback" in document:
        main_messages = [message for message in messages if message.section == "main"]
        if _read_feedback(conversation, document["human_feedback"], main_messages, issues):
            mapped.add("human_feedback")

    conversation.metadata = unmapped_keys(document, frozenset(mapped))
    conversation.artifacts, artifact_warnings = extract_artifacts(messages)
    conversation.warnings = issues.warnings + artifact_warnings
    return conversation


def _read_model(conversation: Conversation, model: object, issues: Issues) -> bool:
    """Fill the model fields; False when the value is unusable (it then stays in metadata)."""
    if model is None:
        return True
    if isinstance(model, str):
        conversation.model_name = conversation.model = model
        return True
    if isinstance(model, dict):
        name = model.get("name", model.get("model"))
        conversation.model_name = name if isinstance(name, str) else ""
        conversation.model = model
        return True
    issues.warn("/model", "model must be a string or an object; kept in metadata")
    return False


def _read_feedback(conversation: Conversation, entries: object, main_messages: list[Message], issues: Issues) -> bool:
    """Attach human_feedback, one entry per main message in order; False when it is not a list at all."""
    if not isinstance(entries, list):
        issues.warn("/human_feedback", "human_feedback must be a list (one entry per main message); kept in metadata")
        return False
    conversation.feedback_origins.append(FEEDBACK_ORIGIN_MASTERBRAIN)
    if len(entries) != len(main_messages):
        issues.warn(
            "/human_feedback",
            f"human_feedback has {len(entries)} entries for {len(main_messages)} main messages; "
            "aligned from the first message",
        )
    for index, (entry, message) in enumerate(zip(entries, main_messages, strict=False)):
        if entry is None:
            continue
        path = f"/human_feedback/{index}"
        if not isinstance(entry, dict):
            issues.warn(path, "a feedback entry must be an object; ignored")
            continue
        score = entry.get("score", 0)
        if isinstance(score, bool) or not isinstance(score, int | float) or score not in _SCORES:
            issues.warn(f"{path}/score", f"score must be -1, 0 or 1, not {score!r}; entry ignored")
            continue
        comment = entry.get("additional")
        comment = comment if isinstance(comment, str) else ""
        # Score 0 means "no score given": such an entry matters only when it carries a comment.
        if score == 0 and not comment.strip():
            continue
        conversation.feedback.append(
            Feedback(
                origin=FEEDBACK_ORIGIN_MASTERBRAIN,
                message_key=message.key,
                score=int(score) or None,
                comment=comment,
                raw=entry,
            )
        )
    return True
