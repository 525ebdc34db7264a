"""Record QA documents: ``{"context": {inject_* settings}, "main_messages": [...]}``, maybe with ``chat_id``.

The wrapper is a chat document's; the ``context`` block (what may be injected) becomes the injection context,
and the injections themselves are read from the tool calls. A malformed id the context lists is a warning, as a
malformed injected id is (``policy.read_context`` reads the block).
"""

from __future__ import annotations

from typing import TypeGuard

from chats.formats.canonical import Conversation
from chats.ingest.chat_document import parse_wrapped
from chats.ingest.common import shape_error
from chats.ingest.policy import read_context
from chats.json_types import JSONObject

NAME = "record_qa"
EXPECTS = "an object with a 'main_messages' list and a 'context' object of inject_* settings"


def matches(document: object) -> TypeGuard[JSONObject]:
    return (
        isinstance(document, dict)
        and isinstance(document.get("main_messages"), list)
        and isinstance(document.get("context"), dict)
    )


def parse(document: object) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    conversation = parse_wrapped(document, format_name=NAME, context_key="context")
    policy = read_context(conversation.injection_context, "/context")
    if policy is not None:
        conversation.warnings.extend(policy.issues)
    return conversation
