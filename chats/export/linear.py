"""Exporters for the linear formats: openai, chat_document, record_qa, chat_history.

A linear format holds one chain of messages, so these export the active path. When the conversation arrived in
a format whose messages have the same shape as the target's, each message goes out exactly as it was received
(`Message.raw`); otherwise it is rebuilt from the canonical fields.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chats.formats.canonical import FEEDBACK_ORIGIN_MASTERBRAIN, Conversation, Feedback, Message
from chats.formats.openai_messages import openai_message

from .capabilities import omitted_notes
from .common import (
    ExportResult,
    active_path,
    chatgpt_fields_note,
    goes_out_raw,
    id_key_needed,
    iso_time,
    keeps_message_extra,
    put_times,
    spill_metadata,
)

# Formats whose content is always a list of parts: their one-text-part messages export as plain strings.
PARTS_ONLY_FORMATS = frozenset({"chat_graph", "chatgpt_export"})

MASTERBRAIN_MESSAGES_KEY = "main_messages"
CHAT_DOCUMENT_MESSAGE_KEYS = ("main_messages", "messages", "history")
RECORD_QA_CONTEXT_KEYS = {
    "protocol": ("inject_airalogy_protocols", "airalogy_protocol_ids"),
    "record": ("inject_airalogy_records", "airalogy_record_ids"),
    "discussion": ("inject_airalogy_discussions", "airalogy_discussion_ids"),
}


def export_openai(conversation: Conversation) -> ExportResult:
    path = active_path(conversation)
    document = [_message(conversation, message, "openai") for message in path]
    notes = omitted_notes(conversation, "openai", path)
    notes.extend(chatgpt_fields_note(conversation, path, "openai"))
    return ExportResult(document=document, omitted=notes)


def export_chat_document(conversation: Conversation) -> ExportResult:
    path = active_path(conversation)
    messages_key = _chat_document_messages_key(conversation, path)
    # A Masterbrain document (`main_messages`) has one feedback entry per main message, given or not.
    return _wrapped(conversation, "chat_document", path, messages_key, always_feedback=messages_key == "main_messages")


def export_record_qa(conversation: Conversation) -> ExportResult:
    path = active_path(conversation)
    return _wrapped(conversation, "record_qa", path, MASTERBRAIN_MESSAGES_KEY, always_feedback=False)


def _wrapped(
    conversation: Conversation, target: str, path: list[Message], messages_key: str, *, always_feedback: bool
) -> ExportResult:
    """A Masterbrain wrapper document: metadata keys around the scenario and main messages.

    Record QA documents are the same wrapper with the injection `context` block.
    """
    scenario_messages = [m for m in path if m.section == "scenario"]
    main_messages = [m for m in path if m.section != "scenario"]
    document: dict[str, Any] = {}
    if id_key_needed(conversation):
        document["chat_id"] = conversation.external_id
    if conversation.user_id:
        document["user_id"] = conversation.user_id
    put_times(document, conversation, ("start_time", "end_time"), iso_time)
    if conversation.title:
        document["title"] = conversation.title
    model = conversation.model if conversation.model is not None else conversation.model_name or None
    if model is not None:
        document["model"] = model
    if conversation.scenario is not None:
        document["scenario"] = conversation.scenario
    if target == "record_qa":
        document["context"] = (
            conversation.injection_context
            if conversation.injection_context is not None
            else _injection_context_from_artifacts(conversation)
        )
    if scenario_messages:
        document["scenario_messages"] = [_message(conversation, m, target) for m in scenario_messages]
    document[messages_key] = [_message(conversation, m, target) for m in main_messages]
    human_feedback = _human_feedback(conversation, main_messages, always=always_feedback)
    if human_feedback is not None:
        document["human_feedback"] = human_feedback
    notes = omitted_notes(conversation, target, path)
    notes.extend(chatgpt_fields_note(conversation, path, target))
    notes.extend(spill_metadata(conversation, document, target))
    return ExportResult(document=document, omitted=notes)


def export_chat_history(conversation: Conversation) -> ExportResult:
    path = active_path(conversation)
    document: dict[str, Any] = {}
    if id_key_needed(conversation):
        document["conversation_id"] = conversation.external_id
    document["chat_history"] = [_message(conversation, m, "chat_history") for m in path]
    if conversation.context_pairs:
        document["context"] = [list(pair) for pair in conversation.context_pairs]
    notes = omitted_notes(conversation, "chat_history", path)
    notes.extend(chatgpt_fields_note(conversation, path, "chat_history"))
    notes.extend(spill_metadata(conversation, document, "chat_history"))
    return ExportResult(document=document, omitted=notes)


# --- helpers ---


def _message(conversation: Conversation, message: Message, target: str) -> Any:
    """The message as the target format holds it: as received when the shapes match, else rebuilt."""
    if goes_out_raw(conversation, message, target):
        return message.raw
    return openai_message(
        message,
        context_key="context" if target == "chat_history" else None,
        single_text_as_string=conversation.format in PARTS_ONLY_FORMATS,
        keep_extra=keeps_message_extra(conversation),
    )


def _chat_document_messages_key(conversation: Conversation, path: list[Message]) -> str:
    """`main_messages`, unless the document came with `messages` or `history`: then the key it came with."""
    if conversation.format == "chat_document":
        for message in path:
            for key in CHAT_DOCUMENT_MESSAGE_KEYS:
                if message.source_path.startswith(f"/{key}/"):
                    return key
    return MASTERBRAIN_MESSAGES_KEY


def _human_feedback(conversation: Conversation, main_messages: list[Message], *, always: bool) -> list[Any] | None:
    """Masterbrain `human_feedback`: one entry per main message, in order; None when there is no feedback
    (unless `always`).

    Feedback imported from a Masterbrain document goes back exactly as received. Other per-message feedback
    (ChatGPT thumbs, reviewers) becomes `{score, additional}`; where a message has several, the Masterbrain
    one wins, then the first.
    """
    by_message: dict[str, list[Feedback]] = defaultdict(list)
    for feedback in conversation.feedback:
        if feedback.message_key is not None:
            by_message[feedback.message_key].append(feedback)
    if not always and not any(m.key in by_message for m in main_messages):
        return None
    entries: list[Any] = []
    for message in main_messages:
        candidates = by_message.get(message.key, [])
        chosen = next((f for f in candidates if f.origin == FEEDBACK_ORIGIN_MASTERBRAIN), None)
        if chosen is None and candidates:
            chosen = candidates[0]
        if chosen is None:
            entries.append({"score": 0, "additional": ""})
        elif chosen.origin == FEEDBACK_ORIGIN_MASTERBRAIN and isinstance(chosen.raw, dict):
            entries.append(chosen.raw)
        else:
            entries.append({"score": chosen.score or 0, "additional": chosen.comment})
    return entries


def _injection_context_from_artifacts(conversation: Conversation) -> dict[str, Any]:
    """A Record QA `context` block saying what the conversation injected (every switch off when nothing)."""
    context: dict[str, Any] = {}
    for kind, (setting, ids_key) in RECORD_QA_CONTEXT_KEYS.items():
        ids: list[str] = []
        for artifact in conversation.artifacts:
            if artifact.kind == kind and artifact.artifact_id not in ids:
                ids.append(artifact.artifact_id)
        context[setting] = {"enabled": bool(ids), ids_key: ids}
    return context
