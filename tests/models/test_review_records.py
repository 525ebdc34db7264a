"""PostgreSQL: what team review publishes is never changed in place (migration 0025), whoever tries, the ORM or raw
SQL: a rubric version is never updated or deleted, a submitted review and a resolution are never updated. A draft
stays editable and is submitted once. Deleting a conversation still takes its reviews and resolution along, as rows;
deleting a queue is refused, since it would take its rubric versions along."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from chats.models import Conversation, Queue, QueueItem, Resolution, Review, ReviewState, RubricVersion, Source
from chats.services.review import item_lease_next, item_resolve, review_save_draft, review_submit
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

RUBRIC_REFUSED = "a rubric version is never changed or deleted"
REVIEW_REFUSED = "a submitted review is never changed"
RESOLUTION_REFUSED = "a resolution is never changed"


@pytest.fixture
def lead() -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User, other_reviewer: User, source: Source) -> Queue:
    queue = make_queue(lead, [reviewer, other_reviewer])
    fill_queue(queue, lead, source, 1, n_messages=4)
    return queue


@pytest.fixture
def item(queue: Queue) -> QueueItem:
    return QueueItem.objects.select_related("queue", "conversation").get(queue=queue)


@pytest.fixture
def submitted(item: QueueItem, reviewer: User) -> Review:
    assert item_lease_next(queue=item.queue, reviewer=reviewer) is not None
    return review_submit(reviewer=reviewer, item=item, answers=ANSWERS)


@pytest.fixture
def resolution(item: QueueItem, lead: User, submitted: Review) -> Resolution:
    return item_resolve(actor=lead, item=item, answers=ANSWERS, correction="The gold answer.")


def _refused(message: str, attempt: Callable[[], Any]) -> None:
    with pytest.raises(DatabaseError, match=message), transaction.atomic():
        attempt()


def _sql(statement: str, *params: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, list(params))


# --------------------------------------------------------------------------------------------------------------
# Rubric versions


def test_a_rubric_version_is_never_updated_or_deleted(queue: Queue) -> None:
    rubric = RubricVersion.objects.get(queue=queue)
    stored = rubric.questions

    def save_changed() -> None:
        rubric.questions = [{**stored[0], "prompt": "Changed under the reviews?"}]
        rubric.save(update_fields=["questions"])

    attempts: list[Callable[[], Any]] = [
        save_changed,
        lambda: RubricVersion.objects.filter(pk=rubric.pk).update(version=7),
        lambda: RubricVersion.objects.filter(pk=rubric.pk).delete(),
        lambda: _sql("UPDATE chats_rubricversion SET questions = '[]'::jsonb WHERE id = %s", rubric.pk),
        lambda: _sql("DELETE FROM chats_rubricversion WHERE id = %s", rubric.pk),
    ]
    for attempt in attempts:
        _refused(RUBRIC_REFUSED, attempt)

    assert RubricVersion.objects.get(pk=rubric.pk).questions == stored
    assert RubricVersion.objects.get(pk=rubric.pk).version == 1


def test_a_new_rubric_version_is_still_written(queue: Queue) -> None:
    first = RubricVersion.objects.get(queue=queue)

    RubricVersion.objects.create(queue=queue, version=2, questions=first.questions[:1])

    assert list(RubricVersion.objects.filter(queue=queue).values_list("version", flat=True)) == [1, 2]


def test_deleting_a_queue_is_refused_because_it_would_delete_its_rubric_versions(queue: Queue) -> None:
    _refused(RUBRIC_REFUSED, queue.delete)

    assert Queue.objects.filter(pk=queue.pk).exists()
    assert RubricVersion.objects.filter(queue=queue).count() == 1
    assert QueueItem.objects.filter(queue=queue).count() == 1


# --------------------------------------------------------------------------------------------------------------
# Reviews: a draft is edited, then submitted once; a submitted review never changes


def test_a_submitted_review_is_never_updated(submitted: Review) -> None:
    def save_changed() -> None:
        review = Review.objects.get(pk=submitted.pk)
        review.answers = {**ANSWERS, "correct": "wrong"}
        review.save(update_fields=["answers"])

    attempts: list[Callable[[], Any]] = [
        save_changed,
        lambda: Review.objects.get(pk=submitted.pk).save(),  # even unchanged
        lambda: Review.objects.filter(pk=submitted.pk).update(answers={}),
        lambda: Review.objects.filter(pk=submitted.pk).update(state=ReviewState.DRAFT, submitted_at=None),
        lambda: _sql("UPDATE chats_review SET answers = '{}'::jsonb WHERE id = %s", submitted.pk),
        lambda: _sql("UPDATE chats_review SET updated_at = now() WHERE id = %s", submitted.pk),
    ]
    for attempt in attempts:
        _refused(REVIEW_REFUSED, attempt)

    stored = Review.objects.get(pk=submitted.pk)
    assert (stored.state, stored.answers) == (ReviewState.SUBMITTED, ANSWERS)


def test_a_draft_is_saved_again_and_then_submitted_once(item: QueueItem, other_reviewer: User) -> None:
    assert item_lease_next(queue=item.queue, reviewer=other_reviewer) is not None
    draft = review_save_draft(reviewer=other_reviewer, item=item, answers={"correct": "wrong"})
    review_save_draft(reviewer=other_reviewer, item=item, answers={"correct": "partly"})
    # A draft's row may be written directly too: the rule is about submitted reviews.
    Review.objects.filter(pk=draft.pk).update(updated_at=timezone.now())
    _sql('UPDATE chats_review SET answers = \'{"correct": "correct"}\'::jsonb WHERE id = %s', draft.pk)

    review_submit(reviewer=other_reviewer, item=item, answers=ANSWERS)

    stored = Review.objects.get(pk=draft.pk)
    assert (stored.state, stored.answers) == (ReviewState.SUBMITTED, ANSWERS)
    _refused(REVIEW_REFUSED, lambda: Review.objects.filter(pk=draft.pk).update(answers={"correct": "wrong"}))


# --------------------------------------------------------------------------------------------------------------
# Resolutions


def test_a_resolution_is_never_updated(resolution: Resolution, reviewer: User) -> None:
    def save_changed() -> None:
        resolution.correction = "A better gold answer."
        resolution.save(update_fields=["correction"])

    attempts: list[Callable[[], Any]] = [
        save_changed,
        lambda: Resolution.objects.filter(pk=resolution.pk).update(answers={}),
        lambda: Resolution.objects.filter(pk=resolution.pk).update(lead=reviewer),
        lambda: _sql("UPDATE chats_resolution SET correction = 'forged' WHERE id = %s", resolution.pk),
    ]
    for attempt in attempts:
        _refused(RESOLUTION_REFUSED, attempt)

    stored = Resolution.objects.get(pk=resolution.pk)
    assert (stored.answers, stored.correction) == (ANSWERS, "The gold answer.")


# --------------------------------------------------------------------------------------------------------------
# Deletion


def test_deleting_a_conversation_deletes_its_submitted_reviews_and_resolution_as_rows(
    item: QueueItem, resolution: Resolution, submitted: Review
) -> None:
    rubric = RubricVersion.objects.get(queue=item.queue)

    Conversation.objects.get(pk=item.conversation_id).delete()

    assert not Review.objects.filter(pk=submitted.pk).exists()
    assert not Resolution.objects.filter(pk=resolution.pk).exists()
    assert not QueueItem.objects.filter(pk=item.pk).exists()
    # The rubric version stays, unchanged, with its queue.
    assert RubricVersion.objects.get(pk=rubric.pk).questions == rubric.questions
