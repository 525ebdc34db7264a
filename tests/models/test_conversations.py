"""The identity and validity rules hold in the database itself, not only in the code that writes rows:
conversations, their messages and tool calls (chats/models/conversations.py)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from chats.models import Conversation, Message, Source, ToolCall
from tests.factories.rows import conversation_row, message_row, violates


def test_a_conversation_id_is_unique_per_source(source: Source, other_source: Source) -> None:
    conversation_row(source, "chat-1")

    assert conversation_row(other_source, "chat-1").pk  # the same id from another source is another conversation
    with pytest.raises(IntegrityError), transaction.atomic():
        conversation_row(source, "chat-1")


def test_a_tool_call_id_is_unique_within_a_conversation(source: Source, conversation: Conversation) -> None:
    message = message_row(conversation, 0)
    ToolCall.objects.create(conversation=conversation, message=message, call_id="call_1")
    elsewhere = conversation_row(source, "chat-2")

    ToolCall.objects.create(conversation=elsewhere, message=message_row(elsewhere, 0), call_id="call_1")
    with pytest.raises(IntegrityError), transaction.atomic():
        ToolCall.objects.create(conversation=conversation, message=message, call_id="call_1", index=1)


def test_a_message_position_is_unique_within_a_conversation(conversation: Conversation) -> None:
    message_row(conversation, 0)

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, key="other", position=0, depth=0, role="user")


def test_a_message_key_is_unique_within_a_conversation(conversation: Conversation) -> None:
    message_row(conversation, 0)

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, key="m0", position=1, depth=1, role="user")


def test_an_input_format_outside_the_choices_is_refused(source: Source) -> None:
    assert violates(
        lambda: Conversation.objects.create(source=source, external_id="chat-x", input_format="smoke_signals")
    )
