"""The team review API: queues, adding conversations (by uuid and by filters, idempotent), next item, blind
reviews, validation errors with JSON paths, and a lead's resolution; a source's key is refused everywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import Conversation, Message, Queue, QueueItem, Source
from tests.factories import make_conversation
from tests.factories.review import ANSWERS, QUESTIONS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def post(client: APIClient, url: str, body: Any = None) -> Any:
    return client.post(url, data=json.dumps(body or {}), content_type="application/json")


def error_paths(response: Any) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User, other_reviewer: User, source: Source) -> Queue:
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 2)
    return queue


def test_a_sources_key_is_refused_on_every_review_endpoint(ingest_client: APIClient, queue: Queue) -> None:
    item = QueueItem.objects.filter(queue=queue).first()
    assert item is not None
    base = f"/api/v1/queues/{queue.pk}"
    for url in ("/api/v1/queues/", f"{base}/items/", f"{base}/items/{item.pk}/reviews/"):
        assert ingest_client.get(url).status_code == 403
    for url in (f"{base}/next/", f"{base}/items/{item.pk}/reviews/", f"{base}/items/{item.pk}/resolution/"):
        assert post(ingest_client, url, {"answers": ANSWERS}).status_code == 403


def test_a_lead_creates_a_queue_and_others_may_not(lead: User, reviewer: User, auditor: User) -> None:
    body = {"name": "Tools", "questions": QUESTIONS, "reviews_per_item": 3, "members": ["rita"]}
    assert post(client_of(reviewer), "/api/v1/queues/", body).status_code == 403
    assert post(client_of(auditor), "/api/v1/queues/", body).status_code == 403
    created = post(client_of(lead), "/api/v1/queues/", body)
    assert created.status_code == 201
    queue = created.json()
    assert (queue["name"], queue["members"], queue["rubric"]["version"]) == ("Tools", ["rita"], 1)
    assert queue["rubric"]["questions"] == QUESTIONS and queue["item_count"] == 0
    # The reviewer sees the queue they work; the auditor sees it too.
    assert [q["name"] for q in client_of(reviewer).get("/api/v1/queues/").json()] == ["Tools"]
    assert [q["name"] for q in client_of(auditor).get("/api/v1/queues/").json()] == ["Tools"]


def test_invalid_queues_are_refused_with_paths(lead: User) -> None:
    bad = {"name": "Bad", "questions": [QUESTIONS[0], {"key": "x", "prompt": "p", "type": "likert"}]}
    response = post(client_of(lead), "/api/v1/queues/", bad)
    assert (response.status_code, error_paths(response)) == (400, ["/questions/1/type"])
    response = post(client_of(lead), "/api/v1/queues/", {"name": "Bad", "questions": [], "reviews_per_item": 11})
    assert (response.status_code, error_paths(response)) == (400, ["/reviews_per_item"])
    response = post(client_of(lead), "/api/v1/queues/", {"name": "Bad", "questions": [], "members": ["ghost"]})
    assert (response.status_code, error_paths(response)) == (400, ["/members"])
    assert not Queue.objects.exists()


def test_a_reviewer_sees_only_the_queues_they_work(lead: User, queue: Queue, no_role_user: User) -> None:
    stranger = User.objects.create_user(username="stan")
    stranger.groups.add(*User.objects.get(username="rita").groups.all())
    assert client_of(stranger).get("/api/v1/queues/").json() == []
    assert client_of(stranger).get(f"/api/v1/queues/{queue.pk}/items/").status_code == 404
    assert post(client_of(stranger), f"/api/v1/queues/{queue.pk}/next/").status_code == 404
    assert client_of(no_role_user).get("/api/v1/queues/").status_code == 403


def test_adding_by_uuids_is_idempotent_and_names_unknown_ones(lead: User, reviewer: User, source: Source) -> None:
    queue = make_queue(lead, [reviewer])
    first, second = (make_conversation(source, n_messages=2, with_tools=False) for _ in range(2))
    url = f"/api/v1/queues/{queue.pk}/items/"
    uuids = [str(first.uuid), str(second.uuid)]
    assert post(client_of(reviewer), url, {"conversations": uuids}).status_code == 403
    assert post(client_of(lead), url, {"conversations": uuids}).json() == {"added": 2}
    assert post(client_of(lead), url, {"conversations": uuids}).json() == {"added": 0}
    unknown = post(client_of(lead), url, {"conversations": [uuids[0], "00000000-0000-4000-8000-000000000000"]})
    assert (unknown.status_code, error_paths(unknown)) == (400, ["/conversations/1"])
    neither = post(client_of(lead), url, {})
    assert neither.status_code == 400
    listed = client_of(reviewer).get(url).json()
    assert sorted(item["conversation"] for item in listed["results"]) == sorted(uuids)


def test_adding_by_filters_uses_the_lists_filters(
    lead: User, reviewer: User, source: Source, other_source: Source
) -> None:
    queue = make_queue(lead, [reviewer])
    ours = [make_conversation(source, n_messages=2, with_tools=False) for _ in range(3)]
    make_conversation(other_source, n_messages=2, with_tools=False)
    url = f"/api/v1/queues/{queue.pk}/items/"
    assert post(client_of(lead), url, {"filters": {"source": source.name}}).json() == {"added": 3}
    assert post(client_of(lead), url, {"filters": {"source": source.name}}).json() == {"added": 0}
    assert set(QueueItem.objects.values_list("conversation", flat=True)) == {c.pk for c in ours}
    bad = post(client_of(lead), url, {"filters": {"date_from": "yesterday"}})
    assert (bad.status_code, error_paths(bad)) == (400, ["/filters/date_from"])
    assert Conversation.objects.count() == 4


def test_next_leases_items_then_answers_204(queue: Queue, reviewer: User) -> None:
    client = client_of(reviewer)
    url = f"/api/v1/queues/{queue.pk}/next/"
    first = post(client, url)
    assert first.status_code == 200
    assert post(client, url).json()["id"] == first.json()["id"]  # held: the same one
    review = post(client, f"/api/v1/queues/{queue.pk}/items/{first.json()['id']}/reviews/", {"answers": ANSWERS})
    assert review.status_code == 201
    second = post(client, url)
    assert second.status_code == 200 and second.json()["id"] != first.json()["id"]
    post(client, f"/api/v1/queues/{queue.pk}/items/{second.json()['id']}/reviews/", {"answers": ANSWERS})
    assert post(client, url).status_code == 204


def test_reviews_are_blind_until_ones_own_is_submitted(
    queue: Queue, lead: User, reviewer: User, other_reviewer: User, auditor: User
) -> None:
    item = QueueItem.objects.filter(queue=queue).order_by("id").first()
    assert item is not None
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/"
    assert post(client_of(reviewer), url, {"answers": ANSWERS}).status_code == 201
    before = client_of(other_reviewer).get(url).json()
    assert before == {"reviews": [], "hidden": 1}
    assert "partly" not in json.dumps(before)
    theirs = {**ANSWERS, "correct": "wrong"}
    assert post(client_of(other_reviewer), url, {"answers": theirs}).status_code == 201
    after = client_of(other_reviewer).get(url).json()
    assert after["hidden"] == 0
    assert {(r["reviewer"], r["answers"]["correct"]) for r in after["reviews"]} == {
        ("rita", "partly"),
        ("oscar", "wrong"),
    }
    for watcher in (lead, auditor):
        assert len(client_of(watcher).get(url).json()["reviews"]) == 2


def test_invalid_answers_are_refused_with_paths(queue: Queue, reviewer: User) -> None:
    item = QueueItem.objects.filter(queue=queue).first()
    assert item is not None
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/"
    response = post(client_of(reviewer), url, {"answers": {**ANSWERS, "correct": "maybe", "quality": {"m3": 7}}})
    assert response.status_code == 400
    assert sorted(error_paths(response)) == ["/answers/correct", "/answers/quality/m3"]
    missing = post(client_of(reviewer), url, {})
    assert (missing.status_code, error_paths(missing)) == (400, ["/answers"])
    assert client_of(reviewer).get(url).json() == {"reviews": [], "hidden": 0}


def test_only_a_lead_resolves_and_auditors_read_the_resolution(
    queue: Queue, lead: User, reviewer: User, auditor: User
) -> None:
    item = QueueItem.objects.filter(queue=queue).first()
    assert item is not None
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/resolution/"
    gold = {"answers": ANSWERS, "correction": "Anneal at 58 °C."}
    for refused in (reviewer, auditor):
        assert post(client_of(refused), url, gold).status_code == 403
    assert client_of(auditor).get(url).status_code == 404  # not resolved yet
    bad = post(client_of(lead), url, {"answers": {"correct": "maybe"}})
    assert bad.status_code == 400 and "/answers/correct" in error_paths(bad)
    resolved = post(client_of(lead), url, gold)
    assert resolved.status_code == 200
    assert (resolved.json()["lead"], resolved.json()["correction"]) == ("lena", "Anneal at 58 °C.")
    assert client_of(auditor).get(url).json()["answers"] == ANSWERS
    assert client_of(reviewer).get(url).status_code == 403
    listed = client_of(lead).get(f"/api/v1/queues/{queue.pk}/items/").json()["results"]
    assert [entry["resolved"] for entry in listed if entry["id"] == item.pk] == [True]


@pytest.mark.parametrize("size", [2, 6])
def test_list_queries_do_not_grow_with_the_data(
    size: int, lead: User, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    queues = [make_queue(lead, [reviewer], name=f"Queue {n}") for n in range(size)]
    fill_queue(queues[0], lead, source, size)
    client = client_of(reviewer)
    # Session, user, groups; then the queues, their members and rubric versions.
    with django_assert_num_queries(6):
        assert len(client.get("/api/v1/queues/").json()) == size
    # Session, user, groups; the queue and the page of items.
    with django_assert_num_queries(5):
        assert len(client.get(f"/api/v1/queues/{queues[0].pk}/items/").json()["results"]) == size
    item = QueueItem.objects.filter(queue=queues[0]).first()
    assert item is not None
    # Session, user, groups; the queue, the item and its reviews.
    with django_assert_num_queries(6):
        client.get(f"/api/v1/queues/{queues[0].pk}/items/{item.pk}/reviews/")


# --- Every answer checked by one validator: each finding a 400 naming the field, never a 500


def _item(queue: Queue) -> QueueItem:
    item = QueueItem.objects.filter(queue=queue).order_by("id").first()
    assert item is not None
    return item


def test_unstorable_text_answers_are_a_400_naming_the_field_on_review_and_resolution(
    queue: Queue, lead: User, reviewer: User
) -> None:
    item = _item(queue)
    base = f"/api/v1/queues/{queue.pk}/items/{item.pk}"
    for text in ("a\u0000b", "\ud800"):
        review = post(client_of(reviewer), f"{base}/reviews/", {"answers": {**ANSWERS, "note": text}})
        assert (review.status_code, error_paths(review)) == (400, ["/answers/note"])
        resolution = post(client_of(lead), f"{base}/resolution/", {"answers": {**ANSWERS, "note": text}})
        assert (resolution.status_code, error_paths(resolution)) == (400, ["/answers/note"])
    correction = post(client_of(lead), f"{base}/resolution/", {"answers": ANSWERS, "correction": "x\u0000"})
    assert correction.status_code == 400
    assert not item.reviews.exists() and not hasattr(QueueItem.objects.get(pk=item.pk), "resolution")


def test_an_answer_nested_fifty_thousand_levels_deep_is_a_400(queue: Queue, reviewer: User) -> None:
    item = _item(queue)
    depth = 50_000
    body = '{"answers": {"correct": ' + "[" * depth + "]" * depth + "}}"
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/"
    response = client_of(reviewer).post(url, data=body, content_type="application/json")
    assert response.status_code == 400 and response.json()["errors"]
    # Deep, but within what the parser reads: the storable boundary names the field.
    deep = {"answers": {**ANSWERS, "note": json.loads("[" * 300 + "]" * 300)}}
    response = post(client_of(reviewer), url, deep)
    assert response.status_code == 400 and error_paths(response)[0].startswith("/answers/note/0/0")
    assert not item.reviews.exists()


def test_per_message_answers_may_name_only_the_reviewed_paths_messages(
    lead: User, reviewer: User, source: Source
) -> None:
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1, n_messages=3)
    item = _item(queue)
    assistant = Message.objects.get(conversation=item.conversation, role="assistant").key
    user = Message.objects.get(conversation=item.conversation, role="user").key
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/"
    bad = post(client_of(reviewer), url, {"answers": {**ANSWERS, "quality": {"no-such-message": 2, "<script>": 3}}})
    assert (bad.status_code, sorted(error_paths(bad))) == (
        400,
        ["/answers/quality/<script>", "/answers/quality/no-such-message"],
    )
    wrong_role = post(client_of(reviewer), url, {"answers": {**ANSWERS, "quality": {user: 2}}})
    assert (wrong_role.status_code, error_paths(wrong_role)) == (400, [f"/answers/quality/{user}"])
    good = post(client_of(reviewer), url, {"answers": {**ANSWERS, "quality": {assistant: 2}}})
    assert good.status_code == 201


def _created(lead: User, questions: Any) -> Any:
    return post(client_of(lead), "/api/v1/queues/", {"name": "Q", "questions": questions})


@pytest.mark.parametrize(
    ("question", "path"),
    [
        ({"key": "ok", "prompt": "OK\u0000?", "type": "boolean"}, "/questions/0/prompt"),
        (
            {"key": "ok", "prompt": "OK?", "type": "categorical", "options": ["yes", "n\u0000o"]},
            "/questions/0/options/1",
        ),
        (
            {"key": "ok", "prompt": "OK?", "type": "ordinal", "scale": {"min": 1, "max": 5, "labels": {"²": "x"}}},
            "/questions/0/scale/labels/²",
        ),
        ({"key": "ok\n", "prompt": "OK?", "type": "boolean"}, "/questions/0/key"),
    ],
)
def test_unstorable_or_malformed_rubrics_are_a_400_naming_the_field(lead: User, question: Any, path: str) -> None:
    response = _created(lead, [question])
    assert (response.status_code, error_paths(response)) == (400, [path])
    assert not Queue.objects.exists()


def test_an_empty_rubric_is_refused(lead: User) -> None:
    response = _created(lead, [])
    assert (response.status_code, error_paths(response)) == (400, ["/questions"])
    assert not Queue.objects.exists()


def test_a_rubric_is_stored_in_its_canonical_form(lead: User) -> None:
    response = _created(lead, [{"key": "ok", "prompt": " OK? ", "type": "boolean"}])
    assert response.status_code == 201
    assert response.json()["rubric"]["questions"] == [
        {"key": "ok", "prompt": "OK?", "type": "boolean", "target": "conversation"}
    ]
