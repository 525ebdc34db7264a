"""Only a person owns feedback: the ownership rule, whoever calls it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from chats.api.authentication import SourcePrincipal
from chats.errors import NotAllowed
from chats.models import Feedback, FeedbackOrigin, Source
from chats.services.feedback import feedback_ensure_owner, feedback_submit
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


def _imported(source: Source) -> Feedback:
    # Feedback that came in with a conversation has no author.
    return Feedback.objects.create(
        conversation=make_conversation(source), origin=FeedbackOrigin.CHATGPT, author=None, score=1
    )


def test_a_source_principal_never_owns_imported_feedback(source: Source) -> None:
    with pytest.raises(NotAllowed):
        feedback_ensure_owner(SourcePrincipal(source), _imported(source))  # type: ignore[arg-type]


def test_a_source_principal_never_owns_a_persons_feedback(source: Source, reviewer: User) -> None:
    feedback, _ = feedback_submit(author=reviewer, conversation=make_conversation(source), score=1)
    with pytest.raises(NotAllowed):
        feedback_ensure_owner(SourcePrincipal(source), feedback)  # type: ignore[arg-type]


def test_the_author_owns_their_feedback_and_a_colleague_does_not(
    source: Source, reviewer: User, other_reviewer: User
) -> None:
    feedback, _ = feedback_submit(author=reviewer, conversation=make_conversation(source), score=1)
    feedback_ensure_owner(reviewer, feedback)
    with pytest.raises(NotAllowed):
        feedback_ensure_owner(other_reviewer, feedback)


def test_a_superuser_manages_imported_feedback(source: Source, admin_user: User) -> None:
    feedback_ensure_owner(admin_user, _imported(source))


@pytest.mark.parametrize("field", ["comment", "correction"])
@pytest.mark.parametrize("text", ["a\x00b", "\ud800", "x\udfff"])
def test_feedback_text_no_column_can_store_is_refused_naming_its_field(
    source: Source, reviewer: User, field: str, text: str
) -> None:
    from chats.errors import InvalidInput
    from chats.models import AuditEvent
    from tests.factories import last_assistant

    conversation = make_conversation(source, n_messages=3)
    events = AuditEvent.objects.count()
    with pytest.raises(InvalidInput) as refused:
        feedback_submit(
            author=reviewer,
            conversation=conversation,
            message=last_assistant(conversation),
            comment=text if field == "comment" else "",
            correction=text if field == "correction" else "",
        )
    assert refused.value.errors[0]["path"] == f"/{field}"
    assert not Feedback.objects.exists() and AuditEvent.objects.count() == events
