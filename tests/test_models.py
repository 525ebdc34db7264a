"""The identity and validity rules hold in the database itself, not only in the code that writes rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from chats.models import ApiKey, Conversation, Feedback, InputFormat, Message, Source, ToolCall


def _conversation(source: Source, external_id: str = "chat-1") -> Conversation:
    return Conversation.objects.create(
        source=source,
        external_id=external_id,
        external_id_digest=Conversation.digest_of(external_id),
        input_format=InputFormat.OPENAI,
    )


def _message(conversation: Conversation, position: int, **fields: Any) -> Message:
    return Message.objects.create(
        conversation=conversation, key=f"m{position}", position=position, depth=position, role="assistant", **fields
    )


def _violates(create: Any) -> bool:
    """True when the database refuses the row (the savepoint keeps the test's transaction usable)."""
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return _conversation(source)


def test_a_conversation_id_is_unique_per_source(source: Source, other_source: Source) -> None:
    _conversation(source, "chat-1")

    assert _conversation(other_source, "chat-1").pk  # the same id from another source is another conversation
    with pytest.raises(IntegrityError), transaction.atomic():
        _conversation(source, "chat-1")


def test_a_tool_call_id_is_unique_within_a_conversation(source: Source, conversation: Conversation) -> None:
    message = _message(conversation, 0)
    ToolCall.objects.create(conversation=conversation, message=message, call_id="call_1")
    elsewhere = _conversation(source, "chat-2")

    ToolCall.objects.create(conversation=elsewhere, message=_message(elsewhere, 0), call_id="call_1")
    with pytest.raises(IntegrityError), transaction.atomic():
        ToolCall.objects.create(conversation=conversation, message=message, call_id="call_1", index=1)


def test_a_message_position_is_unique_within_a_conversation(conversation: Conversation) -> None:
    _message(conversation, 0)

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, key="other", position=0, depth=0, role="user")


def test_a_message_key_is_unique_within_a_conversation(conversation: Conversation) -> None:
    _message(conversation, 0)

    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(conversation=conversation, key="m0", position=1, depth=1, role="user")


def test_reviewer_feedback_must_have_an_author(conversation: Conversation, reviewer: User) -> None:
    assert _violates(lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", score=1))
    assert not _violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", author=reviewer, score=1)
    )


def test_imported_feedback_must_not_have_an_author(conversation: Conversation, reviewer: User) -> None:
    assert _violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="masterbrain", author=reviewer, score=1)
    )
    assert not _violates(lambda: Feedback.objects.create(conversation=conversation, origin="masterbrain", score=1))


@pytest.mark.parametrize("score", [5, 2, -2])
def test_a_score_outside_minus_one_to_one_is_refused(conversation: Conversation, reviewer: User, score: int) -> None:
    assert _violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", author=reviewer, score=score)
    )


def test_a_reviewer_gives_one_feedback_per_conversation(conversation: Conversation, reviewer: User) -> None:
    Feedback.objects.create(conversation=conversation, author=reviewer, score=1)

    assert _violates(lambda: Feedback.objects.create(conversation=conversation, author=reviewer, score=-1))


def test_an_api_key_belongs_to_a_source_or_a_user_never_both(source: Source, reviewer: User) -> None:
    def key(suffix: str, **owner: Any) -> None:
        ApiKey.objects.create(prefix="abcdefgh", key_hash=ApiKey.hash_key(f"mb_{suffix}"), **owner)

    assert _violates(lambda: key("both", source=source, user=reviewer))
    assert _violates(lambda: key("neither"))
    assert not _violates(lambda: key("source", source=source))
    assert not _violates(lambda: key("user", user=reviewer))


def test_an_input_format_outside_the_choices_is_refused(source: Source) -> None:
    assert _violates(
        lambda: Conversation.objects.create(source=source, external_id="chat-x", input_format="smoke_signals")
    )
