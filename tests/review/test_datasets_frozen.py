"""Datasets frozen by content: a published dataset exports the path each item was reviewed on, the same bytes
forever, whatever the source appends, whichever branch becomes active, whatever is resolved or deleted later. Its
SHA-256 is published (API) and checked at every export: a mismatch is a loud error, never a different file."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from chats.models import AuditEvent, Dataset, DatasetLine, Message, QueueItem, Source
from chats.selectors.datasets import dataset_lines
from chats.services.audit import audited_delete
from chats.services.datasets import dataset_freeze_unfrozen, dataset_snapshot_create
from chats.services.review import item_resolve
from tests.factories.growing import Chat, one_question_queue, review_and_resolve
from tests.factories.review import make_lead

pytestmark = pytest.mark.django_db


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def publish(lead: User, name: str, queue_ids: list[int]) -> dict[str, Any]:
    response = client_of(lead).post(
        "/api/v1/datasets/", data=json.dumps({"name": name, "queues": queue_ids}), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    body: dict[str, Any] = response.json()
    return body


def export(lead: User, dataset_id: int, format: str) -> bytes:
    response = client_of(lead).get(f"/api/v1/datasets/{dataset_id}/export/?format={format}")
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)  # type: ignore[attr-defined]


def parsed(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()]


def test_an_export_keeps_the_reviewed_path_after_the_source_appends_two_turns(reviewer: User, source: Source) -> None:
    lead = make_lead()
    chat = Chat.start(source, n_messages=3)
    queue = one_question_queue(lead, reviewer, [chat])
    review_and_resolve(queue, lead, reviewer, correction="Anneal at 58 °C.")
    dataset = publish(lead, "v1", [queue.pk])
    training, gold = export(lead, dataset["id"], "training"), export(lead, dataset["id"], "gold")
    [line] = parsed(training)
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
    assert line["messages"][-1]["content"] == "Anneal at 58 °C."

    chat.grow(turns=2)

    assert export(lead, dataset["id"], "training") == training
    assert export(lead, dataset["id"], "gold") == gold
    [document] = parsed(gold)
    assert len(document["document"]["main_messages"]) == 3
    assert "NEW ANSWER" not in (training + gold).decode()


def test_a_new_dataset_keeps_the_reviewed_path_too(reviewer: User, source: Source) -> None:
    lead = make_lead()
    grows, branches = Chat.start(source), Chat.start(source)
    queue = one_question_queue(lead, reviewer, [grows, branches])
    review_and_resolve(queue, lead, reviewer, correction="Better.")
    grows.grow(turns=2)
    branches.regenerate()

    dataset = publish(lead, "after", [queue.pk])  # published after the conversations moved on
    lines = parsed(export(lead, dataset["id"], "training"))
    assert [[m["content"] for m in line["messages"]][-1] for line in lines] == ["Better.", "Better."]
    assert all(len(line["messages"]) == 3 for line in lines)
    gold = parsed(export(lead, dataset["id"], "gold"))
    assert all(len(line["document"]["main_messages"]) == 3 for line in gold)
    assert "REGENERATED" not in json.dumps(gold) and "NEW ANSWER" not in json.dumps(gold)
    assert all(line["provenance"]["path_sha256"] and line["provenance"]["reviewed_leaf"] for line in gold)


def test_the_sha256_is_published_and_every_export_gives_it(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = one_question_queue(lead, reviewer, [Chat.start(source), Chat.start(source)])
    review_and_resolve(queue, lead, reviewer)
    created = publish(lead, "v1", [queue.pk])
    detail = client_of(lead).get(f"/api/v1/datasets/{created['id']}/").json()
    listed = client_of(lead).get("/api/v1/datasets/").json()
    for format in ("training", "gold"):
        data = export(lead, created["id"], format)
        digest = hashlib.sha256(data).hexdigest()
        assert created[f"{format}_sha256"] == detail[f"{format}_sha256"] == listed[0][f"{format}_sha256"] == digest
        response = client_of(lead).get(f"/api/v1/datasets/{created['id']}/export/?format={format}")
        assert response["X-Content-SHA256"] == digest
    event = AuditEvent.objects.get(action="dataset.created")
    assert event.after is not None and event.after["gold_sha256"] == created["gold_sha256"]

    for user, links in ((lead, True), (reviewer, False)):  # the queue's page shows them, and exports to leads
        page = Client()
        page.force_login(user)
        html = page.get(f"/queues/{queue.pk}/").content.decode()
        assert created["training_sha256"] in html and created["gold_sha256"] in html
        assert (f"/api/v1/datasets/{created['id']}/export/?format=gold" in html) is links


TRIGGERS = {"chats_datasetline": "chats_datasetline_write_once", "chats_dataset": "chats_dataset_digest_write_once"}


@contextmanager
def around_the_freeze() -> Iterator[None]:
    """As a superuser who sets the database's write-once rule aside (PostgreSQL; SQLite has no trigger)."""
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE wants the deferred checks done
            for table, trigger in TRIGGERS.items():
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
        yield
        if postgres:
            for table, trigger in TRIGGERS.items():
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the write-once rule is a PostgreSQL trigger")
def test_the_database_refuses_to_edit_a_published_dataset(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = one_question_queue(lead, reviewer, [Chat.start(source)])
    review_and_resolve(queue, lead, reviewer)
    created = publish(lead, "v1", [queue.pk])
    rewrites = [
        lambda: DatasetLine.objects.filter(dataset_id=created["id"]).update(text="{}"),
        lambda: Dataset.objects.filter(pk=created["id"]).update(gold_sha256="0" * 64),
        lambda: Dataset.objects.filter(pk=created["id"]).update(item_count=0),
    ]
    for rewrite in rewrites:
        with pytest.raises(DatabaseError, match="a published dataset is frozen"), transaction.atomic():
            rewrite()
    Dataset.objects.filter(pk=created["id"]).update(description="Still editable: not part of the exports.")
    assert hashlib.sha256(export(lead, created["id"], "gold")).hexdigest() == created["gold_sha256"]


def test_an_export_whose_lines_no_longer_give_its_sha256_is_refused_loudly(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = one_question_queue(lead, reviewer, [Chat.start(source)])
    review_and_resolve(queue, lead, reviewer)
    created = publish(lead, "v1", [queue.pk])
    exports_before = AuditEvent.objects.filter(action="conversation.exported").count()
    with around_the_freeze():
        DatasetLine.objects.filter(dataset_id=created["id"], format="gold").update(text='{"tampered":true}')

    response = client_of(lead).get(f"/api/v1/datasets/{created['id']}/export/?format=gold")

    assert response.status_code == 500
    [error] = response.json()["errors"]
    assert f"dataset {created['id']}" in error["message"] and created["gold_sha256"] in error["message"]
    assert AuditEvent.objects.filter(action="conversation.exported").count() == exports_before
    assert export(lead, created["id"], "training")  # the other export is intact


def test_deleting_a_conversation_leaves_a_published_dataset_as_it_was(
    reviewer: User, source: Source, admin_user: User
) -> None:
    lead = make_lead()
    kept, deleted = Chat.start(source), Chat.start(source)
    queue = one_question_queue(lead, reviewer, [kept, deleted])
    review_and_resolve(queue, lead, reviewer)
    created = publish(lead, "v1", [queue.pk])
    training, gold = export(lead, created["id"], "training"), export(lead, created["id"], "gold")

    audited_delete(deleted.conversation, actor=admin_user)

    assert export(lead, created["id"], "training") == training
    assert export(lead, created["id"], "gold") == gold
    detail = client_of(lead).get(f"/api/v1/datasets/{created['id']}/").json()
    assert (detail["item_count"], detail["gold_sha256"]) == (2, created["gold_sha256"])
    assert str(deleted.conversation.uuid) in gold.decode()


def test_datasets_taken_before_freezing_are_frozen_once(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = one_question_queue(lead, reviewer, [Chat.start(source)])
    review_and_resolve(queue, lead, reviewer, correction="Better.")
    created = publish(lead, "v1", [queue.pk])
    # As the migration finds a dataset taken before: items, but no lines and no SHA-256.
    with around_the_freeze():
        DatasetLine.objects.filter(dataset_id=created["id"]).delete()
        Dataset.objects.filter(pk=created["id"]).update(training_sha256="", gold_sha256="", item_count=0)

    assert dataset_freeze_unfrozen(actor=lead) == 1
    assert dataset_freeze_unfrozen(actor=lead) == 0
    frozen = Dataset.objects.get(pk=created["id"])
    assert (frozen.training_sha256, frozen.gold_sha256, frozen.item_count) == (
        created["training_sha256"],
        created["gold_sha256"],
        1,
    )
    assert b"".join(dataset_lines(frozen, "training")) == export(lead, created["id"], "training")


# --- The property: whatever happens to the conversations, every published export keeps its bytes ----------------

OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["grow", "regenerate", "switch_back", "delete", "resolve_again", "publish"]),
        st.integers(min_value=0, max_value=3),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lengths=st.lists(st.integers(min_value=2, max_value=6), min_size=1, max_size=3),
    corrected=st.booleans(),
    operations=OPERATIONS,
)
def test_every_published_export_keeps_its_sha256_and_bytes(
    reviewer: User, source: Source, admin_user: User, lengths: list[int], corrected: bool, operations: Any
) -> None:
    lead = User.objects.filter(username="lena").first() or make_lead()
    run = uuid.uuid4().hex[:8]
    chats = [Chat.start(source, n_messages=n) for n in lengths]
    queue = one_question_queue(lead, reviewer, chats, name=f"Pins {run}")
    review_and_resolve(queue, lead, reviewer, correction="Corrected." if corrected else "")
    published: dict[int, dict[str, bytes]] = {}

    def take(name: str) -> None:
        if not QueueItem.objects.filter(queue=queue, resolution__isnull=False).exists():
            return
        dataset = dataset_snapshot_create(actor=lead, name=f"{name} {run}", queues=[queue])
        published[dataset.pk] = {f: b"".join(dataset_lines(dataset, f)) for f in ("training", "gold")}
        assert hashlib.sha256(published[dataset.pk]["training"]).hexdigest() == dataset.training_sha256
        assert hashlib.sha256(published[dataset.pk]["gold"]).hexdigest() == dataset.gold_sha256

    take("first")
    alive = list(chats)
    for step, (operation, pick) in enumerate(operations):
        if not alive:
            break
        chat = alive[pick % len(alive)]
        if operation == "grow":
            chat.grow(turns=1 + pick % 2)
        elif operation == "regenerate":
            chat.regenerate()
        elif operation == "switch_back":
            inactive = Message.objects.filter(conversation=chat.conversation, on_active_path=False).first()
            if inactive is not None:
                from chats.services.branches import message_set_active_branch

                message_set_active_branch(conversation=chat.conversation, message=inactive, actor=lead)
        elif operation == "delete":
            audited_delete(chat.conversation, actor=admin_user)
            alive.remove(chat)
        elif operation == "resolve_again":
            item = QueueItem.objects.filter(queue=queue, conversation=chat.conversation).first()
            if item is not None:
                item_resolve(actor=lead, item=item, answers={"helpful": bool(step % 2)}, correction=f"Take {step}.")
        else:
            take(f"step {step}")
        for pk, exported in published.items():
            dataset = Dataset.objects.get(pk=pk)
            for format, data in exported.items():
                assert b"".join(dataset_lines(dataset, format)) == data
                assert hashlib.sha256(data).hexdigest() == dataset.sha256_of(format)
