"""The ``chat_history`` logging format: ``{chat_history, conversation_id?, context?: [[str, str], ...]}``.

Messages are OpenAI-style (string contents, or part lists in the multimodal variant) with optional ``context``
pairs of their own.
"""

from __future__ import annotations

from typing import TypeGuard

from chats.formats.canonical import Conversation, Issues
from chats.ingest.common import context_pairs, explicit_id, require_messages, shape_error, unmapped_keys
from chats.ingest.injections import extract_artifacts
from chats.ingest.openai import MessageChain
from chats.json_types import JSONObject

NAME = "chat_history"
EXPECTS = "an object with a 'chat_history' list"

_MAPPED = frozenset({"chat_history", "conversation_id", "context"})


def matches(document: object) -> TypeGuard[JSONObject]:
    return isinstance(document, dict) and isinstance(document.get("chat_history"), list)


def parse(document: object) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    issues = Issues()
    chain = MessageChain(issues)
    chain.add(document["chat_history"], path="/chat_history", section="main")
    conversation_id = explicit_id(document, issues)
    messages = chain.finish()
    require_messages(messages, "/chat_history")

    for message in messages:
        # The message parser keeps `context` as an unknown key; valid pairs move to their field.
        if "context" in message.extra and message.extra["context"] is not None:
            pairs = context_pairs(message.extra["context"], f"{message.source_path}/context", issues)
            if pairs is not None:
                message.context_pairs = pairs
                del message.extra["context"]

    conversation = Conversation(format=NAME, messages=messages, external_id=conversation_id)
    mapped = _MAPPED
    if document.get("context") is not None:
        pairs = context_pairs(document["context"], "/context", issues)
        if pairs is None:
            mapped = _MAPPED - {"context"}
        else:
            conversation.context_pairs = pairs
    conversation.metadata = unmapped_keys(document, mapped)
    conversation.artifacts, artifact_warnings = extract_artifacts(messages)
    conversation.warnings = issues.warnings + artifact_warnings
    return conversation
