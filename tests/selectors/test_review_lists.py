"""The queue's items by state (chats.selectors.review): each state's rows, its count beside every other state's in
one query, the disagreement state agreeing with the adjudication page's own reading of the answers, and progress
per queue and per reviewer."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from chats.models import Lease, Queue, QueueItem, Review, ReviewState, Source
from chats.review.rubric import disagreements
from chats.selectors.review import (
    ITEM_STATES,
    current_rubric,
    item_state_counts,
    queue_adjudication_page,
    queue_items_page,
    queue_reviewer_progress,
    state_scope,
)
from chats.services.review import item_lease_next, item_resolve, review_save_draft, review_submit
from tests.factories.review import ANSWERS, QUESTIONS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


def submit(reviewer: User, item: QueueItem, **changes: Any) -> None:
    answers = {**ANSWERS, "quality": {}, **changes}
    review_submit(reviewer=reviewer, item=item, answers=answers)


def states_of(queue: Queue) -> dict[str, set[int]]:
    scope = state_scope(queue)
    return {
        name: set(QueueItem.objects.filter(queue=queue).filter(state.condition(scope)).values_list("pk", flat=True))
        for name, state in ITEM_STATES.items()
    }


def test_each_state_holds_its_items(lead: User, reviewer: User, other_reviewer: User, source: Source) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer])
    fill_queue(queue, lead, source, 6)
    agreed, disputed, resolved, half, leased, waiting = QueueItem.objects.filter(queue=queue).order_by("id")
    for item in (agreed, disputed, resolved):
        submit(reviewer, item)
    submit(other_reviewer, agreed, note="other words: text never disagrees")
    submit(other_reviewer, disputed, correct="wrong")
    submit(other_reviewer, resolved, tools_ok=False)
    item_resolve(actor=lead, item=resolved, answers={**ANSWERS, "quality": {}})
    submit(reviewer, half)
    Lease.objects.create(
        conversation_id=leased.conversation_id,
        item=leased,
        reviewer=other_reviewer,
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    Lease.objects.create(  # expired: holds nothing
        conversation_id=waiting.conversation_id,
        item=waiting,
        reviewer=other_reviewer,
        expires_at=timezone.now() - timedelta(minutes=5),
    )
    assert states_of(queue) == {
        "needs_resolution": {agreed.pk, disputed.pk},
        "disagreement": {disputed.pk, resolved.pk},
        "in_progress": {half.pk, leased.pk},
        "resolved": {resolved.pk},
        "grown_since_review": set(),
    }
    counts = item_state_counts(state_scope(queue))
    assert counts == {
        "all": 6,
        "needs_resolution": 2,
        "disagreement": 2,
        "in_progress": 2,
        "resolved": 1,
        "grown_since_review": 0,
    }
    assert item_state_counts(state_scope(queue), reviewed_only=True)["all"] == 4


def test_a_draft_puts_an_item_in_progress(lead: User, reviewer: User, source: Source) -> None:
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 2)
    item = QueueItem.objects.filter(queue=queue).first()
    assert item is not None
    review_save_draft(reviewer=reviewer, item=item, answers={"correct": "wrong"})
    assert states_of(queue)["in_progress"] == {item.pk}


QUALITY = [None, 1, 2, 3, 5]
CORRECT = [None, "correct", "partly", "wrong"]
ISSUES = [None, [], ["hallucination"], ["unsafe", "hallucination"], ["hallucination", "unsafe"]]


@pytest.mark.parametrize("seed", range(3))
def test_the_disagreement_state_is_the_adjudication_pages_reading_of_the_answers(
    lead: User, source: Source, seed: int
) -> None:
    """Random answers from three reviewers, stored as given: the SQL condition finds exactly the items where
    chats.review.rubric.disagreements finds a question."""
    rng = random.Random(seed)
    people = [User.objects.create_user(username=f"r{n}") for n in range(3)]
    queue = make_queue(lead, people, reviews_per_item=3)
    fill_queue(queue, lead, source, 25)
    rubric = current_rubric(queue)
    now = timezone.now()
    expected = set()
    for item in QueueItem.objects.filter(queue=queue):
        answer_sets: list[Mapping[str, Any]] = []
        for person in people[: rng.randint(1, 3)]:
            answers: dict[str, Any] = {"note": rng.choice(["a", "b"])}
            for key, values in (("correct", CORRECT), ("issues", ISSUES), ("tools_ok", [None, True, False])):
                if (value := rng.choice(values)) is not None:
                    answers[key] = value
            answers["quality"] = {f"m{n}": v for n in range(2) if (v := rng.choice(QUALITY)) is not None}
            answer_sets.append(answers)
            Review.objects.create(
                conversation_id=item.conversation_id,
                item=item,
                reviewer=person,
                rubric_version=rubric,
                answers=answers,
                state=ReviewState.SUBMITTED,
                submitted_at=now,
            )
        if disagreements(QUESTIONS, answer_sets):
            expected.add(item.pk)
    assert states_of(queue)["disagreement"] == expected


def test_the_lists_page_by_state_with_the_same_queries_at_any_size(
    lead: User, reviewer: User, other_reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer])

    def read(*, many: bool) -> None:
        with django_assert_num_queries(4):  # rubric, counts, page, its leases
            queue_items_page(queue, state="in_progress")
        with django_assert_num_queries(3):  # counts, page, its reviews
            queue_adjudication_page(queue, QUESTIONS, state="disagreement" if many else None)
        with django_assert_num_queries(2):  # queue's counts, reviewers
            queue_reviewer_progress(queue)

    fill_queue(queue, lead, source, 2)
    for item in QueueItem.objects.filter(queue=queue):
        submit(reviewer, item)
    read(many=False)
    fill_queue(queue, lead, source, 60)
    for n, item in enumerate(QueueItem.objects.filter(queue=queue).order_by("id")[:40]):
        if not item.submitted_count:
            submit(reviewer, item)
        if n < 30:  # the other ten stay in progress
            submit(other_reviewer, item, correct="wrong")
    read(many=True)


def test_pages_reach_every_item_past_the_first_hundred(lead: User, reviewer: User, source: Source) -> None:
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 130)
    for item in QueueItem.objects.filter(queue=queue):
        submit(reviewer, item)
    seen: list[int] = []
    number = 1
    while True:
        page = queue_adjudication_page(queue, QUESTIONS, state="needs_resolution", page=number)
        assert page.total == 130 and page.pages == 3
        seen += [item.pk for item in page.items]
        if not page.has_next:
            break
        number += 1
    assert sorted(seen) == sorted(QueueItem.objects.filter(queue=queue).values_list("pk", flat=True))
    last = queue_items_page(queue, page=99)
    assert last.number == 3 and len(last.items) == 30


def test_progress_per_queue_and_per_reviewer(lead: User, reviewer: User, other_reviewer: User, source: Source) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 4)
    first, second, *_ = QueueItem.objects.filter(queue=queue).order_by("created_at", "id")
    submit(reviewer, first)
    submit(other_reviewer, first)
    submit(reviewer, second)
    held = item_lease_next(queue=queue, reviewer=other_reviewer)
    assert held is not None and held.pk == second.pk
    progress = queue_reviewer_progress(queue)
    assert (progress.total, progress.done, progress.leased, progress.remaining) == (4, 1, 1, 3)
    assert [(r.username, r.done, r.leased, r.remaining) for r in progress.reviewers] == [
        (other_reviewer.username, 1, 1, 3),
        (reviewer.username, 2, 0, 2),
    ]
