"""The identity and validity rules hold in the database itself, not only in the code that writes rows: feedback
(chats/models/feedback.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Feedback
from tests.factories.rows import violates


def test_reviewer_feedback_must_have_an_author(conversation: Conversation, reviewer: User) -> None:
    assert violates(lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", score=1))
    assert not violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", author=reviewer, score=1)
    )


def test_imported_feedback_must_not_have_an_author(conversation: Conversation, reviewer: User) -> None:
    assert violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="masterbrain", author=reviewer, score=1)
    )
    assert not violates(lambda: Feedback.objects.create(conversation=conversation, origin="masterbrain", score=1))


@pytest.mark.parametrize("score", [5, 2, -2])
def test_a_score_outside_minus_one_to_one_is_refused(conversation: Conversation, reviewer: User, score: int) -> None:
    assert violates(
        lambda: Feedback.objects.create(conversation=conversation, origin="reviewer", author=reviewer, score=score)
    )


def test_a_reviewer_gives_one_feedback_per_conversation(conversation: Conversation, reviewer: User) -> None:
    Feedback.objects.create(conversation=conversation, author=reviewer, score=1)

    assert violates(lambda: Feedback.objects.create(conversation=conversation, author=reviewer, score=-1))
