"""Feedback in place, review status and the branch switch: htmx and plain posts, and who may change what."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from chats.models import AuditEvent, Conversation, Feedback, Message, Source
from chats.services.feedback import feedback_submit
from tests import factories
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db

HTMX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def conversation(source: Source) -> Conversation:
    factories.make_labels("helpful", "hallucination")
    return factories.make_conversation(source, n_messages=5)


@pytest.fixture
def answer(conversation: Conversation) -> Message:
    return factories.last_assistant(conversation)


def save_url(conversation: Conversation) -> str:
    return reverse("chats:feedback_save", args=[conversation.uuid])


def test_htmx_feedback_returns_the_re_rendered_block(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)
    response = client.post(
        save_url(conversation),
        {
            "message": answer.pk,
            "score": "1",
            "labels": ["helpful"],
            "comment": "Grounded.",
            "correction": "Better answer",
            "next": conversation.get_absolute_url(),
        },
        **HTMX,
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith(f'<section class="feedback" id="fb-{answer.pk}"')
    assert "Grounded." in body and "Feedback saved." in body and "Edit your feedback" in body
    feedback = Feedback.objects.get(message=answer, author=reviewer)
    assert feedback.score == 1
    assert [label.name for label in feedback.labels.all()] == ["helpful"]
    assert feedback.correction == "Better answer"
    event = AuditEvent.objects.get(action="feedback.created")
    assert event.after is not None
    assert event.after["labels"] == ["helpful"]


def test_plain_post_redirects_to_the_message_keeping_the_filters(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)
    next_url = f"{conversation.get_absolute_url()}?status=unreviewed&q=pcr"
    response = client.post(save_url(conversation), {"message": answer.pk, "score": "-1", "next": next_url})
    assert response.status_code == 302
    assert response["Location"] == f"{next_url}#m-{answer.pk}"
    page = client.get(response["Location"]).content.decode()
    assert "Thumbs down" in page


def test_conversation_feedback_redirects_to_its_block(
    client: Client, reviewer: User, conversation: Conversation
) -> None:
    client.force_login(reviewer)
    response = client.post(
        save_url(conversation), {"comment": "Whole thread is fine.", "next": conversation.get_absolute_url()}
    )
    assert response["Location"] == f"{conversation.get_absolute_url()}#conversation-feedback"
    assert Feedback.objects.get(conversation=conversation, message=None).comment == "Whole thread is fine."


def test_an_outside_next_url_is_ignored(client: Client, reviewer: User, conversation: Conversation) -> None:
    client.force_login(reviewer)
    response = client.post(save_url(conversation), {"score": "1", "next": "https://evil.example/"})
    assert response["Location"] == f"{conversation.get_absolute_url()}#conversation-feedback"


def test_empty_feedback_is_refused_with_a_message(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)
    response = client.post(save_url(conversation), {"message": answer.pk, "score": ""}, **HTMX)
    assert response.status_code == 200
    assert "give a score, a label, a comment or a correction" in response.content.decode()
    assert not Feedback.objects.exists()


def test_posting_again_changes_the_reviewers_own_feedback(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)
    client.post(save_url(conversation), {"message": answer.pk, "score": "1"}, **HTMX)
    own = Feedback.objects.get(author=reviewer)
    client.post(
        save_url(conversation),
        {"message": answer.pk, "score": "0", "feedback": own.uuid, "labels": ["hallucination"]},
        **HTMX,
    )
    own.refresh_from_db()
    assert own.score == 0
    assert Feedback.objects.filter(author=reviewer).count() == 1
    event = AuditEvent.objects.get(action="feedback.updated")
    assert event.before is not None and event.after is not None
    assert event.before["score"] == 1 and event.after["score"] == 0
    assert event.after["labels"] == ["hallucination"]


def test_a_reviewer_cannot_change_another_reviewers_feedback(
    client: Client, reviewer: User, other_reviewer: User, conversation: Conversation, answer: Message
) -> None:
    theirs, _ = feedback_submit(
        author=other_reviewer, conversation=conversation, message=answer, score=1, comment="Mine"
    )
    client.force_login(reviewer)
    response = client.post(
        save_url(conversation), {"message": answer.pk, "score": "-1", "feedback": theirs.uuid, "comment": "Changed"}
    )
    assert response.status_code == 403
    theirs.refresh_from_db()
    assert (theirs.score, theirs.comment) == (1, "Mine")


def test_a_reviewer_cannot_delete_another_reviewers_feedback(
    client: Client, reviewer: User, other_reviewer: User, conversation: Conversation, answer: Message
) -> None:
    theirs, _ = feedback_submit(author=other_reviewer, conversation=conversation, message=answer, score=1)
    client.force_login(reviewer)
    response = client.post(reverse("chats:feedback_delete", args=[conversation.uuid, theirs.uuid]))
    assert response.status_code == 403
    assert Feedback.objects.filter(pk=theirs.pk).exists()


def test_a_reviewer_deletes_their_own_feedback(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    own, _ = feedback_submit(author=reviewer, conversation=conversation, message=answer, score=1)
    client.force_login(reviewer)
    response = client.post(reverse("chats:feedback_delete", args=[conversation.uuid, own.uuid]), **HTMX)
    assert response.status_code == 200
    assert "Give feedback" in response.content.decode()
    assert not Feedback.objects.filter(pk=own.pk).exists()
    assert AuditEvent.objects.filter(action="feedback.deleted").count() == 1


def test_imported_feedback_cannot_be_changed_by_a_reviewer(client: Client, reviewer: User, source: Source) -> None:
    document = load_fixture("chat_document/masterbrain_chat_document.json")
    conversation = factories.ingest(source, document, format="chat_document")
    imported = conversation.feedback.filter(author__isnull=True).select_related("message").first()
    assert imported is not None, "the fixture carries human_feedback"
    client.force_login(reviewer)
    response = client.post(
        save_url(conversation),
        {
            "message": imported.message_id or "",
            "feedback": imported.uuid,
            "score": "1",
            "comment": "x",
        },
    )
    assert response.status_code == 403


@pytest.mark.parametrize("user_fixture", ["auditor", "no_role_user"])
def test_auditors_and_users_without_a_role_cannot_post(
    client: Client, request, user_fixture: str, conversation: Conversation, answer: Message
) -> None:
    client.force_login(request.getfixturevalue(user_fixture))
    uuid = conversation.uuid
    for url, data in [
        (save_url(conversation), {"message": answer.pk, "score": "1"}),
        (reverse("chats:review_status", args=[uuid]), {"status": "reviewed"}),
        (reverse("chats:active_branch", args=[uuid]), {"message": answer.pk}),
    ]:
        assert client.post(url, data).status_code == 403
    assert not Feedback.objects.exists()
    conversation.refresh_from_db()
    assert conversation.review_status == "unreviewed"


def test_anonymous_posts_are_sent_to_sign_in(client: Client, conversation: Conversation) -> None:
    response = client.post(save_url(conversation), {"score": "1"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_feedback_pages_refuse_get(client: Client, reviewer: User, conversation: Conversation) -> None:
    client.force_login(reviewer)
    assert client.get(save_url(conversation)).status_code == 405


def test_review_status_with_htmx_and_without(client: Client, reviewer: User, conversation: Conversation) -> None:
    client.force_login(reviewer)
    url = reverse("chats:review_status", args=[conversation.uuid])
    response = client.post(url, {"status": "in_review"}, **HTMX)
    assert response.status_code == 200
    assert 'id="review-status"' in response.content.decode() and "In review" in response.content.decode()
    next_url = f"{conversation.get_absolute_url()}?model=x"
    response = client.post(url, {"status": "reviewed", "next": next_url})
    assert response["Location"] == f"{next_url}#review-status"
    conversation.refresh_from_db()
    assert conversation.review_status == "reviewed"
    assert AuditEvent.objects.filter(action="conversation.status_changed").count() == 2
    assert client.post(url, {"status": "done"}).status_code == 400


def test_feedback_on_a_message_of_another_conversation_is_404(
    client: Client, reviewer: User, conversation: Conversation, source: Source
) -> None:
    other = factories.make_conversation(source)
    client.force_login(reviewer)
    response = client.post(save_url(conversation), {"message": factories.last_assistant(other).pk, "score": "1"})
    assert response.status_code == 404


# Saving feedback over htmx: the session, the user and their groups (3); the conversation, the labels named, the
# message (3); the reviewer's feedback read, written and labelled, the conversation's counts recomputed and stored,
# the audit event (11 with the savepoints around them); the audit chain's head, after its lock on PostgreSQL (1-2);
# the block re-rendered: the message's feedback, their labels, every label for the form (3).
FEEDBACK_SAVE_QUERIES = 22 if settings.IS_POSTGRES else 21


@pytest.mark.parametrize(
    ("n_messages", "n_labels", "n_others"),
    [
        pytest.param(4, 1, 0, id="a short thread, one label"),
        pytest.param(40, 20, 5, id="40 messages, 20 labels, 5 others"),
    ],
)
def test_saving_feedback_takes_the_same_queries_whatever_the_thread_labels_and_other_feedback(
    client: Client,
    reviewer: User,
    source: Source,
    django_assert_num_queries: Any,
    n_messages: int,
    n_labels: int,
    n_others: int,
) -> None:
    labels = factories.make_labels(*(f"label-{number}" for number in range(n_labels)))
    conversation = factories.make_conversation(source, n_messages=n_messages)
    answer = factories.last_assistant(conversation)
    for number in range(n_others):
        other = User.objects.create_user(username=f"other-{number}")
        feedback_submit(author=other, conversation=conversation, message=answer, score=-1, labels=labels)
    client.force_login(reviewer)

    with django_assert_num_queries(FEEDBACK_SAVE_QUERIES):
        response = client.post(
            save_url(conversation),
            {"message": answer.pk, "score": "1", "labels": [label.name for label in labels]},
            **HTMX,
        )

    assert response.status_code == 200
    assert response.content.decode().count('class="fb-entry') == n_others + 1
    saved = Feedback.objects.get(message=answer, author=reviewer)
    assert sorted(label.name for label in saved.labels.all()) == sorted(label.name for label in labels)


def _form_block(body: str, target: int | str) -> str:
    start = body.index(f'id="fb-{target}"')
    return body[start : body.index("</section>", start)]


def test_a_long_thread_carries_feedback_forms_only_when_asked_for(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)

    closed = client.get(conversation.get_absolute_url()).content.decode()
    opened = client.get(f"{conversation.get_absolute_url()}?feedback={answer.pk}").content.decode()

    assert 'name="comment"' not in _form_block(closed, answer.pk)
    assert "Give feedback" in _form_block(closed, answer.pk)
    assert 'name="comment"' in _form_block(opened, answer.pk) and 'name="correction"' in _form_block(opened, answer.pk)
    assert 'name="comment"' not in _form_block(opened, "conversation")


def test_htmx_fetches_the_open_form_of_one_message(
    client: Client, reviewer: User, conversation: Conversation, answer: Message
) -> None:
    client.force_login(reviewer)
    url = reverse("chats:feedback_form", args=[conversation.uuid])

    query: dict[str, str | int] = {"message": answer.pk, "next": conversation.get_absolute_url()}
    response = client.get(url, query, **HTMX)

    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<section class="feedback" id="fb-{answer.pk}"')
    assert 'name="comment"' in body and f'name="message" value="{answer.pk}"' in body


def test_the_feedback_form_is_refused_to_auditors_and_to_other_conversations_messages(
    client: Client, auditor: User, reviewer: User, conversation: Conversation, answer: Message, source: Source
) -> None:
    url = reverse("chats:feedback_form", args=[conversation.uuid])
    client.force_login(auditor)
    assert client.get(url, {"message": answer.pk}).status_code == 403

    other = factories.make_conversation(source, n_messages=3, chat_id="airalogy.id.chat.another")
    client.force_login(reviewer)
    assert client.get(url, {"message": factories.last_assistant(other).pk}).status_code == 404


@pytest.mark.parametrize("on", ["user message", "conversation"])
def test_a_correction_of_anything_but_an_assistant_message_is_refused_as_the_api_refuses_it(
    client: Client, reviewer: User, conversation: Conversation, on: str
) -> None:
    client.force_login(reviewer)
    user_message = conversation.messages.filter(role="user").first()
    assert user_message is not None
    target = {"message": user_message.pk} if on == "user message" else {}
    post = {**target, "score": "1", "correction": "Say it otherwise.", "next": conversation.get_absolute_url()}
    response = client.post(save_url(conversation), post, **HTMX)
    assert response.status_code == 200
    assert "only an assistant message can be corrected" in response.content.decode()
    assert not Feedback.objects.exists()
    # Without htmx: back to the page, which says why.
    page = client.post(save_url(conversation), post, follow=True).content.decode()
    assert "only an assistant message can be corrected" in page and "Feedback saved." not in page
    assert not Feedback.objects.exists()
