"""Rows written directly, past the services (as a bug or a raw SQL client might), and whether the database refuses
one: for the tests of the constraints the database itself holds (tests/models/)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from chats.models import Conversation, InputFormat, Message, Source


def conversation_row(source: Source, external_id: str = "chat-1") -> Conversation:
    return Conversation.objects.create(
        source=source,
        external_id=external_id,
        external_id_digest=Conversation.digest_of(external_id),
        input_format=InputFormat.OPENAI,
    )


def message_row(conversation: Conversation, position: int, **fields: Any) -> Message:
    return Message.objects.create(
        conversation=conversation, key=f"m{position}", position=position, depth=position, role="assistant", **fields
    )


def violates(create: Any) -> bool:
    """True when the database refuses the row (the savepoint keeps the test's transaction usable)."""
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False
