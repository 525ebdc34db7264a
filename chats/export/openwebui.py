"""Exporter for Open WebUI: one item of its "Export chats" array (`{id, user_id, title, chat: {models, history,
messages, ...}, created_at, updated_at, ...}`).

The item holds every branch: `chat.history.messages` maps each message id to the message, linked by `parentId`
and `childrenIds`, and `currentId` names the active leaf; `chat.messages` is the active branch again, as Open WebUI
keeps it. A message received from Open WebUI goes out exactly as received (`Message.raw`); others are rebuilt:
the text as the `content` string, reasoning before it as a `<details type="reasoning">` block, images and files
in `files`, a rating in `annotation`. Open WebUI has no place for tool calls, their results, refusals or context
pairs: they ride as OpenAI-style keys of the message, which the openwebui parser reads back.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from chats.formats.canonical import FEEDBACK_ORIGIN_OPENWEBUI, Conversation, Feedback, Message
from chats.formats.openai_messages import OPENAI_STYLE_KEYS, openai_tool_call, text_of
from chats.formats.openwebui import ANNOTATION_KEY, MESSAGE_KEYS, METADATA_CHAT_KEY, RATINGS, quote_reasoning

from .capabilities import omitted_notes
from .common import (
    ExportResult,
    active_path,
    chatgpt_fields_note,
    children_by_parent,
    epoch_seconds,
    goes_out_raw,
    keeps_message_extra,
    put_times,
    spill_metadata,
)

NAME = "openwebui"

# Message keys the openwebui parser reads: another format's unknown key of the same name would change its meaning.
# (What the parser left in `extra` of a message received in this format goes back: it reads the same again.)
_READ_KEYS = MESSAGE_KEYS | OPENAI_STYLE_KEYS | {ANNOTATION_KEY}


def export_openwebui(conversation: Conversation) -> ExportResult:
    messages = conversation.messages
    path = active_path(conversation)
    keys = {m.key for m in messages}
    children = children_by_parent(messages)
    annotations, unplaced = _annotations(conversation, keys)
    clashing: set[str] = set()
    reordered = 0

    history_messages: dict[str, Any] = {}
    for message in messages:
        child_keys = children.get(message.key, [])
        annotation = annotations.get(message.key)
        if goes_out_raw(conversation, message, NAME):
            history_messages[message.key] = _as_received(message.raw, child_keys, annotation)
        else:
            history_messages[message.key] = _rebuilt(conversation, message, child_keys, keys, annotation, clashing)
            reordered += _attachment_before_text(message)

    same_format = conversation.format == NAME
    carried = conversation.metadata.get(METADATA_CHAT_KEY) if same_format else None
    if isinstance(carried, dict):
        chat = dict(carried)  # the chat's own keys, as received
    elif same_format:
        chat = {}
    else:
        chat = {"id": conversation.external_id or "", "title": conversation.title}
    if not same_format and conversation.model_name:
        chat["models"] = [conversation.model_name]  # (received in this format, the chat's own list is in `chat`)
    carried_history = chat.get("history")
    history = dict(carried_history) if isinstance(carried_history, dict) else {}
    history["messages"] = history_messages
    history["currentId"] = path[-1].key if path else None
    chat["history"] = history
    if "messages" not in chat:  # kept as received only when it was not a copy of the active branch
        chat["messages"] = [history_messages[m.key] for m in path]
    if not same_format and conversation.started_at is not None:
        chat["timestamp"] = int(conversation.started_at.timestamp() * 1000)  # Open WebUI's is in milliseconds

    document: dict[str, Any] = {}
    if conversation.external_id:
        document["id"] = conversation.external_id
    if conversation.user_id:
        document["user_id"] = conversation.user_id
    if conversation.title:
        document["title"] = conversation.title
    document["chat"] = chat
    put_times(document, conversation, ("created_at", "updated_at"), _seconds)

    notes = omitted_notes(conversation, NAME, messages)
    if reordered:
        notes.append(f"the place of attachments among the text of {reordered} message(s) (they follow the text)")
    if unplaced:
        notes.append(f"feedback beyond one rating per message ({unplaced})")
    notes.extend(chatgpt_fields_note(conversation, messages, NAME))
    if clashing:
        notes.append(f"message keys that clash with the format: {', '.join(sorted(clashing))}")
    # The chat's own keys (metadata["chat"] of a conversation received in this format) are in `chat` already.
    spilled = conversation
    if same_format and METADATA_CHAT_KEY in conversation.metadata:
        rest = {k: v for k, v in conversation.metadata.items() if k != METADATA_CHAT_KEY}
        spilled = Conversation(format=conversation.format, messages=[], metadata=rest)
    notes.extend(spill_metadata(spilled, document, NAME))
    return ExportResult(document=document, omitted=notes)


def _attachment_before_text(message: Message) -> bool:
    """Whether an attachment comes before some text: the content string and `files` cannot say so."""
    attachment_seen = False
    for part in message.parts:
        kind = part.get("type")
        if kind == "text" and attachment_seen and part.get("text"):
            return True
        attachment_seen = attachment_seen or kind not in ("text", "refusal")
    return False


def _annotations(conversation: Conversation, keys: set[str]) -> tuple[dict[str, Any], int]:
    """Each rated message's `annotation`, and how many feedback entries found no place (one per message).

    A rating imported from Open WebUI goes back exactly as received; other feedback (a Masterbrain score, a ChatGPT
    thumb) becomes `{rating, comment}`, without a rating when it has no thumbs score.
    """
    by_message: dict[str, list[Feedback]] = defaultdict(list)
    for feedback in conversation.feedback:
        if feedback.message_key is not None and feedback.message_key in keys:
            by_message[feedback.message_key].append(feedback)
    annotations: dict[str, Any] = {}
    unplaced = 0
    for key, candidates in by_message.items():
        chosen = next((f for f in candidates if f.origin == FEEDBACK_ORIGIN_OPENWEBUI), candidates[0])
        unplaced += len(candidates) - 1
        if chosen.origin == FEEDBACK_ORIGIN_OPENWEBUI and isinstance(chosen.raw, dict):
            annotations[key] = chosen.raw
            continue
        annotation: dict[str, Any] = {}
        if chosen.score in RATINGS:
            annotation["rating"] = chosen.score
        if chosen.comment:
            annotation["comment"] = chosen.comment
        if annotation:  # else neither a thumb nor a comment: nothing to write
            annotations[key] = annotation
    return annotations, unplaced


def _as_received(raw: dict[str, Any], child_keys: list[str], annotation: Any) -> dict[str, Any]:
    """A received message, its `childrenIds` completed with messages added after it was received (a new branch),
    and its rating made current."""
    listed = raw.get("childrenIds")
    listed = listed if isinstance(listed, list) else []
    missing = [key for key in child_keys if key not in listed]
    changed = {}
    if missing:
        changed["childrenIds"] = [*listed, *missing]
    if annotation is not None and raw.get(ANNOTATION_KEY) != annotation:
        changed[ANNOTATION_KEY] = annotation
    return {**raw, **changed} if changed else raw


def _rebuilt(
    conversation: Conversation,
    message: Message,
    child_keys: list[str],
    keys: set[str],
    annotation: Any,
    clashing: set[str],
) -> dict[str, Any]:
    text = text_of(message.parts)
    # Open WebUI writes reasoning into an assistant's content (and its parser reads it only there).
    inline_reasoning = message.reasoning if message.role == "assistant" else ""
    out: dict[str, Any] = {
        "id": message.key,
        "parentId": message.parent_key if message.parent_key in keys else None,
        "childrenIds": list(child_keys),
        "role": message.role,
        "content": quote_reasoning(inline_reasoning) + text if inline_reasoning else text,
    }
    seconds = _seconds(message.created_at)
    if seconds is not None:
        out["timestamp"] = seconds
    files = [_file(part) for part in message.parts if part.get("type") not in ("text", "refusal")]
    if files:
        out["files"] = files
    if annotation is not None:
        out[ANNOTATION_KEY] = annotation
    # Open WebUI has no place for these: they ride as OpenAI-style keys, which the openwebui parser reads back.
    if message.name:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [openai_tool_call(call) for call in message.tool_calls]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning and not inline_reasoning:
        out["reasoning_content"] = message.reasoning
    refusal = "".join(str(part.get("refusal", "")) for part in message.parts if part.get("type") == "refusal")
    if refusal:
        out["refusal"] = refusal
    if message.context_pairs:
        out["context"] = [list(pair) for pair in message.context_pairs]
    if keeps_message_extra(conversation):
        for key, value in message.extra.items():
            if key in _READ_KEYS and conversation.format != NAME:
                if key not in out:
                    clashing.add(key)
                continue
            out.setdefault(key, value)
    return out


def _file(part: dict[str, Any]) -> Any:
    """A non-text part as an entry of a message's `files` (an unknown part goes back exactly as received)."""
    kind = part.get("type")
    if kind == "image":
        image: dict[str, Any] = {"type": "image", "url": part.get("url", "")}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return image
    if kind == "file":
        names = {"id": part.get("file_id"), "name": part.get("filename"), "file_data": part.get("file_data")}
        return {"type": "file", **{key: value for key, value in names.items() if value is not None}}
    if kind == "unknown":
        return part.get("raw")
    return dict(part)  # audio, and part types this module does not know yet: kept rather than lost


def _seconds(moment: datetime | None) -> int | float | None:
    """Epoch seconds as Open WebUI writes them: a whole number, unless the time has a fraction."""
    seconds = epoch_seconds(moment)
    if seconds is None:
        return None
    return int(seconds) if seconds.is_integer() else seconds
