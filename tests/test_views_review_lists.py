"""The queue page's and the adjudication page's item lists: paged, filtered by state with a count for each, every
item reachable whatever the queue's size; progress per reviewer; a bad state or page is a 400 naming it; and the
same number of queries with few items or many."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.forms import RubricQuestionForm
from chats.models import AuditEvent, Queue, QueueItem, Source
from chats.services.review import item_lease_next, item_resolve, review_submit
from tests.factories.review import ANSWERS, QUESTIONS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db

GOLD = {**ANSWERS, "quality": {}}


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def item_links(html: str, queue: Queue) -> list[int]:
    return [int(pk) for pk in re.findall(rf'href="/queues/{queue.pk}/items/(\d+)/"', html)]


def state_counts(html: str) -> dict[str, int]:
    return {name: int(n) for name, n in re.findall(r'data-state-count="(\w+)">(\d+)<', html)}


def reviewed_queue(lead: User, reviewer: User, source: Source, n: int) -> Queue:
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, n)
    for item in QueueItem.objects.filter(queue=queue):
        review_submit(reviewer=reviewer, item=item, answers=GOLD)
    return queue


def test_the_adjudication_page_reaches_the_items_past_the_first_hundred_once_those_are_resolved(
    lead: User, reviewer: User, source: Source
) -> None:
    queue = reviewed_queue(lead, reviewer, source, 105)
    items = list(QueueItem.objects.filter(queue=queue).order_by("created_at", "id"))
    for item in items[:100]:
        item_resolve(actor=lead, item=item, answers=GOLD)
    client = signed_in(lead)
    response = client.get(f"/queues/{queue.pk}/adjudicate/?state=needs_resolution")
    assert response.status_code == 200
    html = response.content.decode()
    assert set(item_links(html, queue)) == {item.pk for item in items[100:]}
    assert state_counts(html) == {
        "all": 105,
        "needs_resolution": 5,
        "disagreement": 0,
        "in_progress": 0,
        "resolved": 100,
        "grown_since_review": 0,
    }
    # Every reviewed item, a page at a time.
    seen: set[int] = set()
    for page in range(1, 7):
        seen |= set(item_links(client.get(f"/queues/{queue.pk}/adjudicate/?page={page}").content.decode(), queue))
    assert seen == {item.pk for item in items}


def test_resolving_goes_back_to_the_state_and_page_it_was_posted_from(
    lead: User, reviewer: User, source: Source
) -> None:
    queue = reviewed_queue(lead, reviewer, source, 2)
    item = QueueItem.objects.filter(queue=queue).first()
    assert item is not None
    response = signed_in(lead).post(
        f"/queues/{queue.pk}/items/{item.pk}/resolve/",
        {"state": "needs_resolution", "page": "1", "q.correct": "partly", "q.issues!": "1", "q.tools_ok": "yes"},
    )
    assert response.status_code == 302
    assert response["Location"] == f"/queues/{queue.pk}/adjudicate/?state=needs_resolution#item-{item.pk}"


def test_the_queue_page_lists_every_item_a_page_at_a_time_and_by_state(
    lead: User, reviewer: User, source: Source
) -> None:
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 230)
    items = list(QueueItem.objects.filter(queue=queue).order_by("created_at", "id"))
    held = item_lease_next(queue=queue, reviewer=reviewer)
    assert held is not None
    client = signed_in(lead)
    last = client.get(f"/queues/{queue.pk}/?page=5").content.decode()
    assert item_links(last, queue) == [item.pk for item in items[200:]]
    assert 'rel="prev"' in last and "Page 5 of 5" in last
    in_progress = client.get(f"/queues/{queue.pk}/?state=in_progress").content.decode()
    assert item_links(in_progress, queue) == [held.pk]
    assert state_counts(in_progress) == {
        "all": 230,
        "needs_resolution": 0,
        "disagreement": 0,
        "in_progress": 1,
        "resolved": 0,
        "grown_since_review": 0,
    }


@pytest.mark.parametrize(
    ("query", "named"), [("state=grown", "/state"), ("page=0", "/page"), ("page=²", "/page"), ("page=x", "/page")]
)
def test_a_bad_state_or_page_is_a_400_naming_it(
    lead: User, reviewer: User, source: Source, query: str, named: str
) -> None:
    queue = make_queue(lead, [reviewer])
    client = signed_in(lead)
    for url in (f"/queues/{queue.pk}/", f"/queues/{queue.pk}/adjudicate/"):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400
        assert response.content.decode().startswith(f"{named}:")


def test_the_queue_page_shows_progress_per_reviewer(
    lead: User, reviewer: User, other_reviewer: User, source: Source
) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 3)
    first = QueueItem.objects.filter(queue=queue).order_by("created_at", "id")[0]
    review_submit(reviewer=reviewer, item=first, answers=GOLD)
    item_lease_next(queue=queue, reviewer=other_reviewer)
    html = signed_in(reviewer).get(f"/queues/{queue.pk}/").content.decode()
    rows = dict(re.findall(r'<tr data-reviewer="(\w+)">(.*?)</tr>', html))
    numbers = {name: re.findall(r'<td class="num">(\d+)</td>', row) for name, row in rows.items()}
    assert numbers == {reviewer.username: ["1", "0", "2"], other_reviewer.username: ["0", "1", "3"]}


def test_a_lead_sets_the_lease_time_from_the_edit_page(lead: User, reviewer: User) -> None:
    queue = make_queue(lead, [reviewer])
    client = signed_in(lead)
    page = client.get(f"/queues/{queue.pk}/").content.decode()
    assert 'name="lease_minutes"' in page and 'value="30"' in page
    form = {
        "name": queue.name,
        "instructions": queue.instructions,
        "reviews_per_item": "2",
        "lease_minutes": "90",
        "members": [reviewer.username],
        "rubric-TOTAL_FORMS": str(len(QUESTIONS)),
        "rubric-INITIAL_FORMS": str(len(QUESTIONS)),
    }
    for n, question in enumerate(QUESTIONS):
        row = RubricQuestionForm.initial_of(question)
        form |= {f"rubric-{n}-{name}": "" if value is None else str(value) for name, value in row.items()}
    response = client.post(f"/queues/{queue.pk}/edit/", form)
    assert response.status_code in (302, 400), response.content
    queue.refresh_from_db()
    assert queue.lease_minutes == 90
    event = AuditEvent.objects.filter(action="queue.updated", target_id=str(queue.pk)).latest("id")
    assert event.after == {"lease_minutes": 90}


@pytest.mark.parametrize("path", ["", "adjudicate/"])
def test_the_lists_take_the_same_queries_with_few_items_or_many(
    lead: User, reviewer: User, other_reviewer: User, source: Source, path: str, django_assert_num_queries: Any
) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer])
    client = signed_in(lead)
    # session, user, groups, the queue (members, rubric), the state counts, the page and its leases or reviews, and
    # the rest of each page (progress, agreement, the datasets, the edit form), all fixed in number
    expected = {"": 19, "adjudicate/": 9}[path]

    def read(state: str) -> None:
        with django_assert_num_queries(expected):
            assert client.get(f"/queues/{queue.pk}/{path}?state={state}").status_code == 200

    fill_queue(queue, lead, source, 2)
    for item in QueueItem.objects.filter(queue=queue):
        review_submit(reviewer=reviewer, item=item, answers=GOLD)
    read("in_progress")
    fill_queue(queue, lead, source, 80)
    for item in QueueItem.objects.filter(queue=queue)[:60]:
        if not item.submitted_count:
            review_submit(reviewer=reviewer, item=item, answers=GOLD)
    for item in QueueItem.objects.filter(queue=queue)[:30]:
        review_submit(reviewer=other_reviewer, item=item, answers={**GOLD, "correct": "wrong"})
    read("in_progress")
    read("disagreement")


def test_add_to_queue_with_an_invalid_filter_adds_nothing_and_says_why(lead: User, source: Source) -> None:
    queue = make_queue(lead, [])
    fill_queue(make_queue(lead, [], name="Other"), lead, source, 3)  # three conversations to (not) add
    response = signed_in(lead).post(
        "/conversations/add-to-queue/", {"queue": queue.pk, "scope": "filters", "has_tool_calls": "maybe"}, follow=True
    )
    assert QueueItem.objects.filter(queue=queue).count() == 0
    assert "Nothing added: has_tool_calls: Must be true or false" in response.content.decode()
