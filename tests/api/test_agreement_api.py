"""The agreement endpoint, from reviews entered through the API: it reproduces the published worked examples of
design/review.md (Krippendorff 2011's 4 observers x 12 units; a 50-item Cohen's kappa of 0.40), answers leads
and auditors only (a reviewer would learn others' answers from it), and reads in a fixed number of queries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from chats.models import Message, Queue, QueueItem, Source
from tests.factories.review import fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db

SCALE = {"min": 1, "max": 5}
KRIPPENDORFF_QUESTIONS = [
    {"key": "nominal", "prompt": "As categories", "type": "categorical", "options": ["1", "2", "3", "4", "5"]},
    {"key": "ordinal", "prompt": "As a scale", "type": "ordinal", "scale": SCALE},
]
# Krippendorff (2011), rows A-D over 12 units; None is a unit the observer did not judge.
KRIPPENDORFF = {
    "a": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "b": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "c": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "d": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def reviewers(*names: str) -> list[User]:
    group = Group.objects.get(name="Reviewers")
    people = [User.objects.create_user(username=name) for name in names]
    for person in people:
        person.groups.add(group)
    return people


def submit(person: User, queue: Queue, item: QueueItem, answers: dict[str, Any]) -> None:
    response = client_of(person).post(
        f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/",
        data=json.dumps({"answers": answers}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()


def items_of(queue: Queue) -> list[QueueItem]:
    return list(QueueItem.objects.filter(queue=queue).order_by("created_at", "id"))


def question(body: dict[str, Any], key: str) -> dict[str, Any]:
    return next(q for q in body["questions"] if q["key"] == key)


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


def test_the_published_krippendorff_example_entered_through_the_api(lead: User, source: Source) -> None:
    people = reviewers(*KRIPPENDORFF)
    queue = make_queue(lead, people, reviews_per_item=4, questions=KRIPPENDORFF_QUESTIONS)
    fill_queue(queue, lead, source, 12)
    for person, row in zip(people, KRIPPENDORFF.values(), strict=True):
        for item, value in zip(items_of(queue), row, strict=True):
            if value is not None:
                submit(person, queue, item, {"nominal": str(value), "ordinal": value})

    body = client_of(lead).get(f"/api/v1/queues/{queue.pk}/agreement/").json()
    nominal, ordinal = question(body, "nominal"), question(body, "ordinal")
    assert round(nominal["alpha"], 3) == 0.743
    assert round(ordinal["alpha"], 3) == 0.815
    assert (nominal["level_of_measurement"], ordinal["level_of_measurement"]) == ("nominal", "ordinal")
    # Unit 12 has one judgement only: 11 pairable units, 41 answers, 4 reviewers, 6 pairs named by user name.
    assert (nominal["n_items"], nominal["n_answers"], nominal["n_reviewers"]) == (11, 41, 4)
    assert nominal["meaningful"] is True
    assert sorted(tuple(pair["reviewers"]) for pair in nominal["pairs"]) == [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("b", "c"),
        ("b", "d"),
        ("c", "d"),
    ]
    a_b = next(pair for pair in nominal["pairs"] if pair["reviewers"] == ["a", "b"])
    # A and B both judged units 1-9 and differ only on unit 6.
    assert (a_b["n_items"], round(a_b["percent_agreement"], 4)) == (9, round(8 / 9, 4))


def test_the_published_cohens_kappa_example_entered_through_the_api(lead: User, source: Source) -> None:
    first, second = reviewers("ann", "ben")
    queue = make_queue(
        lead, [first, second], reviews_per_item=2, questions=[{"key": "ok", "prompt": "OK?", "type": "boolean"}]
    )
    fill_queue(queue, lead, source, 50)
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    for item, (a, b) in zip(items_of(queue), pairs, strict=True):
        submit(first, queue, item, {"ok": a})
        submit(second, queue, item, {"ok": b})

    body = client_of(lead).get(f"/api/v1/queues/{queue.pk}/agreement/").json()
    (pair,) = question(body, "ok")["pairs"]
    assert (pair["reviewers"], pair["n_items"]) == (["ann", "ben"], 50)
    assert round(pair["kappa"], 2) == 0.40
    assert round(pair["percent_agreement"], 2) == 0.70


def test_few_items_are_marked_and_text_questions_have_no_figure(
    lead: User, reviewer: User, other_reviewer: User, source: Source
) -> None:
    questions = [
        {"key": "ok", "prompt": "OK?", "type": "boolean"},
        {"key": "note", "prompt": "Why?", "type": "text"},
    ]
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2, questions=questions)
    fill_queue(queue, lead, source, 3)
    for item in items_of(queue):
        submit(reviewer, queue, item, {"ok": True, "note": "fine"})
        submit(other_reviewer, queue, item, {"ok": True, "note": "fine"})
    body = client_of(lead).get(f"/api/v1/queues/{queue.pk}/agreement/").json()
    assert [q["key"] for q in body["questions"]] == ["ok"]
    (ok,) = body["questions"]
    assert (ok["n_items"], ok["meaningful"], body["min_items"]) == (3, False, 10)
    # Every answer the same: alpha is undefined, and says why instead of failing.
    assert ok["alpha"] is None and ok["alpha_reason"]


def test_only_leads_and_auditors_read_agreement(
    lead: User, reviewer: User, auditor: User, ingest_client: APIClient, source: Source
) -> None:
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    url = f"/api/v1/queues/{queue.pk}/agreement/"
    assert client_of(reviewer).get(url).status_code == 403
    assert ingest_client.get(url).status_code == 403
    assert APIClient().get(url).status_code in (401, 403)
    assert client_of(auditor).get(url).status_code == 200
    assert client_of(lead).get(url).status_code == 200
    assert client_of(lead).get("/api/v1/queues/999999/agreement/").status_code == 404


@pytest.mark.parametrize("n_items", [2, 12])
def test_agreement_reads_in_a_fixed_number_of_queries(
    lead: User,
    reviewer: User,
    other_reviewer: User,
    source: Source,
    n_items: int,
    django_assert_num_queries: Any,
) -> None:
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, n_items, n_messages=3)
    for item in items_of(queue):
        answer = Message.objects.get(conversation=item.conversation, role="assistant").key
        answers = {"correct": "partly", "issues": ["unsafe"], "quality": {answer: 3}, "tools_ok": False}
        submit(reviewer, queue, item, answers)
        submit(other_reviewer, queue, item, {**answers, "correct": "wrong"})
    client = client_of(lead)
    # The same at 2 and at 12 items: session, user, roles (twice), queue, rubric, reviews.
    with django_assert_num_queries(7):
        assert client.get(f"/api/v1/queues/{queue.pk}/agreement/").status_code == 200
