"""The queue API's parity with the pages: a queue read and changed (`GET`/`PATCH /api/v1/queues/<id>/`), its items
by state and a page at a time (as the schema says), progress per queue and reviewer, a lead's assignment and
release, one's own draft, and the queue's lease time."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import AuditEvent, Lease, Queue, QueueItem, RubricVersion, Source
from chats.services.review import item_resolve, review_submit
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db

GOLD = {**ANSWERS, "quality": {}}


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User, other_reviewer: User, source: Source) -> Queue:
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 3)
    return queue


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def send(client: APIClient, method: str, url: str, body: Any = None) -> Any:
    return client.generic(method, url, data=json.dumps(body or {}), content_type="application/json")


def paths(response: Any) -> list[str]:
    return [error["path"] for error in response.json()["errors"]]


def items(queue: Queue) -> list[QueueItem]:
    return list(QueueItem.objects.filter(queue=queue).order_by("created_at", "id"))


# --- GET and PATCH a queue


def test_a_queue_is_read_by_whoever_sees_it_and_changed_by_a_lead(queue: Queue, lead: User, reviewer: User) -> None:
    url = f"/api/v1/queues/{queue.pk}/"
    read = client_of(reviewer).get(url)
    assert read.status_code == 200
    assert {key: read.json()[key] for key in ("id", "name", "reviews_per_item", "lease_minutes", "item_count")} == {
        "id": queue.pk,
        "name": "Answers",
        "reviews_per_item": 2,
        "lease_minutes": 30,
        "item_count": 3,
    }
    assert send(client_of(reviewer), "PATCH", url, {"name": "Mine"}).status_code == 403
    changed = send(
        client_of(lead), "PATCH", url, {"name": "Renamed", "lease_minutes": 90, "members": [reviewer.username]}
    )
    assert changed.status_code == 200, changed.json()
    body = changed.json()
    assert (body["name"], body["lease_minutes"], body["members"], body["rubric"]["version"]) == (
        "Renamed",
        90,
        [reviewer.username],
        1,
    )
    queue.refresh_from_db()
    assert (queue.name, queue.lease_minutes) == ("Renamed", 90)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"lease_minutes": 0}, "/lease_minutes"),
        ({"lease_minutes": 7 * 24 * 60 + 1}, "/lease_minutes"),
        ({"lease_minutes": "soon"}, "/lease_minutes"),
        ({"members": ["nobody-here"]}, "/members"),
        ({"reviews_per_item": 11}, "/reviews_per_item"),
    ],
)
def test_a_bad_change_is_a_400_naming_the_field(queue: Queue, lead: User, body: dict[str, Any], path: str) -> None:
    response = send(client_of(lead), "PATCH", f"/api/v1/queues/{queue.pk}/", body)
    assert response.status_code == 400
    assert paths(response) == [path]


def test_a_change_refused_in_part_changes_nothing(queue: Queue, lead: User) -> None:
    before = AuditEvent.objects.count()
    response = send(
        client_of(lead), "PATCH", f"/api/v1/queues/{queue.pk}/", {"name": "Renamed", "questions": "not a rubric"}
    )
    assert response.status_code == 400
    queue.refresh_from_db()
    assert queue.name == "Answers" and AuditEvent.objects.count() == before


def test_changing_the_questions_through_the_api_keeps_the_version_of_given_reviews(
    queue: Queue, lead: User, reviewer: User
) -> None:
    review_submit(reviewer=reviewer, item=items(queue)[0], answers=GOLD)
    questions = [{"key": "ok", "prompt": "OK?", "type": "boolean", "target": "conversation"}]
    response = send(client_of(lead), "PATCH", f"/api/v1/queues/{queue.pk}/", {"questions": questions})
    assert response.status_code == 200
    assert response.json()["rubric"] == {"version": 2, "questions": questions}
    assert RubricVersion.objects.filter(queue=queue).count() == 2


# --- The lease time


def test_next_holds_an_item_for_the_queues_lease_time(queue: Queue, lead: User, reviewer: User) -> None:
    assert send(client_of(lead), "PATCH", f"/api/v1/queues/{queue.pk}/", {"lease_minutes": 90}).status_code == 200
    started = timezone.now()
    assert client_of(reviewer).post(f"/api/v1/queues/{queue.pk}/next/").status_code == 200
    lease = Lease.objects.get(reviewer=reviewer)
    assert timedelta(minutes=89) < lease.expires_at - started < timedelta(minutes=91)


# --- Items by state, a page at a time


def test_the_items_list_filters_by_state(queue: Queue, lead: User, reviewer: User, other_reviewer: User) -> None:
    first, second, third = items(queue)
    for person in (reviewer, other_reviewer):
        review_submit(reviewer=person, item=first, answers=GOLD)
        review_submit(
            reviewer=person, item=second, answers={**GOLD, "correct": "wrong"} if person == reviewer else GOLD
        )
    item_resolve(actor=lead, item=first, answers=GOLD)
    review_submit(reviewer=reviewer, item=third, answers=GOLD)
    client = client_of(lead)

    def listed(state: str) -> list[int]:
        response = client.get(f"/api/v1/queues/{queue.pk}/items/?state={state}")
        assert response.status_code == 200
        return [row["id"] for row in response.json()["results"]]

    assert listed("resolved") == [first.pk]
    assert listed("needs_resolution") == [second.pk]
    assert listed("disagreement") == [second.pk]
    assert listed("in_progress") == [third.pk]
    assert listed("") == [first.pk, second.pk, third.pk]
    bad = client.get(f"/api/v1/queues/{queue.pk}/items/?state=done")
    assert bad.status_code == 400 and paths(bad) == ["/state"]


def test_the_items_list_pages_by_cursor(queue: Queue, lead: User, source: Source) -> None:
    fill_queue(queue, lead, source, 4)
    client = client_of(lead)
    seen: list[int] = []
    url: str | None = f"/api/v1/queues/{queue.pk}/items/?page_size=2"
    while url:
        page = client.get(url).json()
        assert set(page) == {"next", "previous", "results"}
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert seen == [item.pk for item in items(queue)]


def test_the_schema_documents_the_items_list_as_the_page_it_sends(api_client: APIClient) -> None:
    schema = yaml.safe_load(api_client.get("/api/v1/schema/").content)
    operation = schema["paths"]["/api/v1/queues/{id}/items/"]["get"]
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    ref = body["$ref"].rsplit("/", 1)[-1]
    page = schema["components"]["schemas"][ref]
    assert page["type"] == "object" and {"next", "previous", "results"} <= set(page["properties"])
    assert page["properties"]["results"]["type"] == "array"
    parameters = {parameter["name"]: parameter for parameter in operation["parameters"]}
    assert {"cursor", "page_size", "state"} <= set(parameters)
    assert parameters["state"]["schema"]["enum"] == [
        "needs_resolution",
        "disagreement",
        "in_progress",
        "resolved",
        "grown_since_review",
    ]
    for path in ("/api/v1/queues/{id}/", "/api/v1/queues/{id}/progress/", "/api/v1/queues/{id}/items/{item}/draft/"):
        assert path in schema["paths"]


# --- Progress


def test_progress_per_queue_and_per_reviewer(queue: Queue, lead: User, reviewer: User, other_reviewer: User) -> None:
    first, second, _ = items(queue)
    review_submit(reviewer=reviewer, item=first, answers=GOLD)
    review_submit(reviewer=other_reviewer, item=first, answers=GOLD)
    review_submit(reviewer=reviewer, item=second, answers=GOLD)
    assert client_of(other_reviewer).post(f"/api/v1/queues/{queue.pk}/next/").status_code == 200
    response = client_of(reviewer).get(f"/api/v1/queues/{queue.pk}/progress/")
    assert response.status_code == 200
    assert response.json() == {
        "queue": queue.pk,
        "total": 3,
        "done": 1,
        "leased": 1,
        "remaining": 2,
        "states": {
            "all": 3,
            "needs_resolution": 1,
            "disagreement": 0,
            "in_progress": 1,
            "resolved": 0,
            "grown_since_review": 0,
        },
        "reviewers": [
            {"username": other_reviewer.username, "done": 1, "leased": 1, "remaining": 2},
            {"username": reviewer.username, "done": 2, "leased": 0, "remaining": 1},
        ],
    }


@pytest.mark.parametrize("route", ["items/?state=in_progress", "progress/"])
def test_the_lists_take_the_same_queries_with_few_items_or_many(
    queue: Queue, lead: User, reviewer: User, source: Source, route: str, django_assert_num_queries: Any
) -> None:
    client = client_of(lead)
    # session, user, groups, the queue, (items: the rubric, the page | progress: the counts, the reviewers, the
    # rubric, the state counts)
    expected = {"items/?state=in_progress": 6, "progress/": 8}[route]

    def read() -> None:
        with django_assert_num_queries(expected):
            assert client.get(f"/api/v1/queues/{queue.pk}/{route}").status_code == 200

    review_submit(reviewer=reviewer, item=items(queue)[0], answers=GOLD)
    read()
    fill_queue(queue, lead, source, 40)
    for item in items(queue)[1:30]:
        review_submit(reviewer=reviewer, item=item, answers=GOLD)
    read()


# --- Assignment and release


def test_a_lead_assigns_and_releases_an_item(queue: Queue, lead: User, reviewer: User, other_reviewer: User) -> None:
    item = items(queue)[0]
    base = f"/api/v1/queues/{queue.pk}/items/{item.pk}/"
    client = client_of(lead)
    assigned = send(client, "POST", f"{base}assign/", {"reviewer": reviewer.username})
    assert assigned.status_code == 200
    assert assigned.json()["item"] == item.pk and assigned.json()["reviewer"] == reviewer.username
    assert send(client, "POST", f"{base}assign/", {"reviewer": other_reviewer.username}).status_code == 200
    assert send(client, "POST", f"{base}release/", {"reviewer": reviewer.username}).json() == {"released": 1}
    assert send(client, "POST", f"{base}release/", {}).json() == {"released": 1}
    assert not Lease.objects.filter(item=item).exists()
    assert send(client_of(reviewer), "POST", f"{base}assign/", {"reviewer": reviewer.username}).status_code == 403


def test_assigning_to_someone_unknown_or_who_has_reviewed_is_a_400_and_to_a_non_member_a_403(
    queue: Queue, lead: User, reviewer: User
) -> None:
    item = items(queue)[0]
    review_submit(reviewer=reviewer, item=item, answers=GOLD)
    outsider = User.objects.create_user(username="outsider")
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/assign/"
    client = client_of(lead)
    unknown = send(client, "POST", url, {"reviewer": "nobody-here"})
    assert unknown.status_code == 400 and paths(unknown) == ["/reviewer"]
    reviewed = send(client, "POST", url, {"reviewer": reviewer.username})
    assert reviewed.status_code == 400 and paths(reviewed) == ["/reviewer"]
    assert send(client, "POST", url, {"reviewer": outsider.username}).status_code == 403


# --- Drafts


def test_a_member_saves_and_reads_their_own_draft_and_nobody_elses(
    queue: Queue, lead: User, reviewer: User, other_reviewer: User
) -> None:
    item = items(queue)[0]
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/draft/"
    assert client_of(reviewer).get(url).status_code == 404
    saved = send(client_of(reviewer), "PUT", url, {"answers": {"correct": "wrong"}})
    assert saved.status_code == 200
    assert (saved.json()["answers"], saved.json()["state"]) == ({"correct": "wrong"}, "draft")
    assert client_of(reviewer).get(url).json()["answers"] == {"correct": "wrong"}
    assert client_of(other_reviewer).get(url).status_code == 404
    assert client_of(lead).get(url).status_code == 404
    assert send(client_of(lead), "PUT", url, {"answers": {}}).status_code == 403


def test_a_draft_with_a_wrong_answer_or_after_submitting_is_a_400(queue: Queue, reviewer: User) -> None:
    item = items(queue)[0]
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/draft/"
    wrong = send(client_of(reviewer), "PUT", url, {"answers": {"correct": "maybe"}})
    assert wrong.status_code == 400 and paths(wrong) == ["/answers/correct"]
    review_submit(reviewer=reviewer, item=item, answers=GOLD)
    after = send(client_of(reviewer), "PUT", url, {"answers": {"correct": "wrong"}})
    assert after.status_code == 400
    assert client_of(reviewer).get(url).json()["state"] == "submitted"
