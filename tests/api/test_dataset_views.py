"""The datasets API: snapshots by leads, frozen exports (training with the lead's correction, gold), who may do
what, validation errors with JSON paths, and query counts that do not grow with the data."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.test import APIClient

from chats.models import AuditEvent, Queue, QueueItem, Source
from chats.services.review import item_resolve
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def post(client: APIClient, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def lines(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.content
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User, source: Source) -> Queue:
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 2, n_messages=3)
    return queue


def resolve_all(queue: Queue, lead: User, correction: str = "") -> None:
    for item in QueueItem.objects.filter(queue=queue).order_by("id"):
        item_resolve(actor=lead, item=item, answers=ANSWERS, correction=correction)


def test_a_lead_snapshots_and_an_old_export_stays_as_it_was(lead: User, queue: Queue) -> None:
    resolve_all(queue, lead, correction="Anneal at 58 °C.")
    client = client_of(lead)
    created = post(client, "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk], "description": "first"})
    assert created.status_code == 201, created.content
    v1 = created.json()
    assert (v1["item_count"], v1["queues"], v1["created_by"]) == (2, [{"id": queue.pk, "name": "Answers"}], "lena")
    training = lines(client.get(f"/api/v1/datasets/{v1['id']}/export/?format=training"))
    assert [line["messages"][-1]["content"] for line in training] == ["Anneal at 58 °C."] * 2
    meta = training[0]["metadata"]
    assert (meta["dataset"], meta["queue"]["name"], meta["lead"], meta["rubric_version"]) == (
        {"id": v1["id"], "name": "v1"},
        "Answers",
        "lena",
        1,
    )
    assert meta["item"] and meta["resolution"]
    gold = lines(client.get(f"/api/v1/datasets/{v1['id']}/export/?format=gold"))
    assert [line["answers"] for line in gold] == [ANSWERS, ANSWERS]
    assert gold[0]["correction"] == "Anneal at 58 °C." and gold[0]["document"]

    first = QueueItem.objects.filter(queue=queue).order_by("id").first()
    assert first is not None
    item_resolve(actor=lead, item=first, answers={**ANSWERS, "correct": "wrong"}, correction="")
    assert lines(client.get(f"/api/v1/datasets/{v1['id']}/export/?format=gold")) == gold
    assert lines(client.get(f"/api/v1/datasets/{v1['id']}/export/?format=training")) == training
    v2 = post(client, "/api/v1/datasets/", {"name": "v2", "queues": [queue.pk]}).json()
    new_gold = lines(client.get(f"/api/v1/datasets/{v2['id']}/export/?format=gold"))
    assert [line["answers"]["correct"] for line in new_gold] == ["wrong", "partly"]
    assert AuditEvent.objects.filter(action="conversation.exported", target_type="dataset").count() == 5


def test_who_may_list_snapshot_and_export(
    lead: User, queue: Queue, reviewer: User, auditor: User, no_role_user: User, ingest_client: APIClient
) -> None:
    resolve_all(queue, lead)
    dataset = post(client_of(lead), "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk]}).json()
    export = f"/api/v1/datasets/{dataset['id']}/export/?format=gold"
    for user in (reviewer, auditor):
        assert client_of(user).get("/api/v1/datasets/").status_code == 200
        assert client_of(user).get(f"/api/v1/datasets/{dataset['id']}/").status_code == 200
        assert post(client_of(user), "/api/v1/datasets/", {"name": "v2", "queues": [queue.pk]}).status_code == 403
    assert client_of(reviewer).get(export).status_code == 403
    assert client_of(auditor).get(export).status_code == 200
    assert client_of(no_role_user).get("/api/v1/datasets/").status_code == 403
    assert ingest_client.get("/api/v1/datasets/").status_code == 403
    assert APIClient().get("/api/v1/datasets/").status_code == 401


def test_invalid_snapshots_and_exports_are_refused_with_paths(lead: User, queue: Queue) -> None:
    client = client_of(lead)

    def paths(response: Any) -> list[str]:
        assert response.status_code == 400, response.content
        return [e["path"] for e in response.json()["errors"]]

    assert paths(post(client, "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk]})) == ["/queues"]
    assert paths(post(client, "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk, 99999]})) == ["/queues/1"]
    assert paths(post(client, "/api/v1/datasets/", {"queues": [queue.pk]})) == ["/name"]
    resolve_all(queue, lead)
    dataset = post(client, "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk]}).json()
    assert paths(post(client, "/api/v1/datasets/", {"name": "v1", "queues": [queue.pk]})) == ["/name"]
    assert paths(client.get(f"/api/v1/datasets/{dataset['id']}/export/?format=csv")) == ["/format"]
    assert client.get("/api/v1/datasets/99999/export/?format=gold").status_code == 404


def test_list_and_export_queries_do_not_grow_with_the_data(
    lead: User, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    client = client_of(lead)
    small = make_queue(lead, [reviewer], name="Small")
    fill_queue(small, lead, source, 1, n_messages=3)
    resolve_all(small, lead, correction="Better.")
    one = post(client, "/api/v1/datasets/", {"name": "one", "queues": [small.pk]}).json()
    big = make_queue(lead, [reviewer], name="Big")
    fill_queue(big, lead, source, 6, n_messages=3)
    resolve_all(big, lead, correction="Better.")
    many = post(client, "/api/v1/datasets/", {"name": "many", "queues": [big.pk, small.pk]}).json()
    assert many["item_count"] == 7

    # session, user, groups, datasets, their queues
    with django_assert_num_queries(5):
        assert len(client.get("/api/v1/datasets/").json()) == 2
    # One batch of frozen lines either way: session, user, groups, the dataset, its lines read once to check the
    # SHA-256, the audited export record (savepoint, chain head, event, release), then the lines as they are sent.
    # PostgreSQL takes one more: the lock on the audit chain's head (SQLite's writes are serialized already).
    export_queries = 10 if connection.vendor == "postgresql" else 9
    for dataset in (one, many):
        with django_assert_num_queries(export_queries):
            exported = lines(client.get(f"/api/v1/datasets/{dataset['id']}/export/?format=training"))
        assert len(exported) == dataset["item_count"]
