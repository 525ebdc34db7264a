"""Next item under concurrency (PostgreSQL): reviewers calling "next" at the same moment never share a slot."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections

from chats.models import Lease, Queue, QueueItem, Source
from chats.services.review import item_lease_next
from tests.factories.review import fill_queue, make_lead, make_queue

ITEMS = 10
REVIEWS_PER_ITEM = 2


def call_next_at_once(queue: Queue, reviewers: list[User]) -> dict[str, int | None]:
    """Every reviewer calls "next" in their own thread and connection, released together by a barrier."""
    barrier = threading.Barrier(len(reviewers))
    given: dict[str, int | None] = {}
    failures: list[BaseException] = []

    def work(reviewer: User) -> None:
        try:
            barrier.wait()
            item = item_lease_next(queue=queue, reviewer=reviewer)
            given[reviewer.username] = None if item is None else item.pk
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(reviewer,)) for reviewer in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    return given


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_next_calls_hand_out_each_slot_once(source: Source) -> None:
    assert connection.vendor == "postgresql"
    reviewers = [User.objects.create_user(username=f"reviewer-{n:02}") for n in range(24)]
    lead = make_lead()
    queue = make_queue(lead, reviewers, reviews_per_item=REVIEWS_PER_ITEM)
    fill_queue(queue, lead, source, ITEMS)

    first = call_next_at_once(queue, reviewers[:16])

    assert len(first) == 16 and None not in first.values()
    per_item = Counter(first.values())
    assert max(per_item.values()) <= REVIEWS_PER_ITEM
    assert sum(per_item.values()) == 16
    # The oldest items go first: the 16 slots fill the 8 oldest items' 2 slots each.
    oldest = list(QueueItem.objects.filter(queue=queue).order_by("created_at", "id").values_list("pk", flat=True))
    assert per_item == dict.fromkeys(oldest[:8], REVIEWS_PER_ITEM)

    # Eight more at once: four slots are left, so four get one and four get nothing.
    second = call_next_at_once(queue, reviewers[16:])
    assert Counter(item is None for item in second.values()) == {False: 4, True: 4}
    held = Counter(Lease.objects.values_list("item", flat=True))
    assert sorted(held.values()) == [REVIEWS_PER_ITEM] * ITEMS
    # Every slot went to one reviewer: no reviewer holds two leases, none holds one twice.
    assert Lease.objects.count() == Lease.objects.values("reviewer").distinct().count() == ITEMS * REVIEWS_PER_ITEM


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_drafts_saved_at_once_by_one_reviewer_all_succeed_into_one_review(source: Source) -> None:
    """Quick key presses send several draft saves of the same review together: none may fail (no deadlock, no
    duplicate row), and one review holds the last answers."""
    from chats.models import Review
    from chats.services.review import review_save_draft

    assert connection.vendor == "postgresql"
    lead = make_lead()
    reviewer = User.objects.create_user(username="quick-keys")
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1)
    item = QueueItem.objects.select_related("queue", "conversation").get(queue=queue)
    barrier = threading.Barrier(6)
    failures: list[BaseException] = []

    def save(choice: str) -> None:
        try:
            barrier.wait()
            review_save_draft(reviewer=reviewer, item=item, answers={"correct": choice})
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(c,)) for c in ("correct", "partly", "wrong") * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    (review,) = Review.objects.filter(item=item, reviewer=reviewer)
    assert review.answers["correct"] in ("correct", "partly", "wrong")
