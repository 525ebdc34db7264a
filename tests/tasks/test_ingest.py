"""The ingest worker's task (chats/tasks/ingest.py over chats/services/ingest_queue.py): every queued receipt gets
a final outcome. A document that cannot be stored is rejected alone with the reason, whatever step fails; a
transient database failure retries with backoff up to the bound, then the receipts still queued are rejected with
that reason. The task runs as a worker runs it (`apply`: its failures are its state, not raised)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection
from rest_framework.test import APIClient

from chats.models import Conversation, IngestionReceipt
from chats.tasks.ingest import MAX_RETRIES, ingest_queued
from tests.factories.poison import MARKER, chat, refuse_in_database

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

Capture = Callable[..., Any]


def enqueue(client: APIClient, documents: list[Any], capture: Capture) -> list[int]:
    """A 202'd asynchronous bulk whose task is not sent (its commit is not played); the receipts' ids, in order."""
    with capture(execute=False):
        response = client.post(
            "/api/v1/ingest/bulk/?async=true", data=json.dumps(documents), content_type="application/json"
        )
    assert response.status_code == 202
    uuids = [item["receipt"] for item in response.json()["results"]]
    by_uuid = dict(IngestionReceipt.objects.filter(uuid__in=uuids).values_list("uuid", "pk"))
    return [by_uuid[uuid.UUID(u)] for u in uuids]


def outcomes(ids: list[int]) -> list[str]:
    by_pk = dict(IngestionReceipt.objects.filter(pk__in=ids).values_list("pk", "outcome"))
    return [by_pk[pk] for pk in ids]


def test_a_document_whose_receipt_cannot_be_completed_is_rejected_alone_and_the_chunk_is_stored(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    # The failure is outside the document's own write (its receipt's completion, a trigger on the receipts): the
    # chunk fails whole, then each receipt is applied alone, and the one that fails alone is rejected.
    documents = [chat("g-1"), chat(f"{MARKER}-id"), chat("g-2")]
    ids = enqueue(ingest_client, documents, django_capture_on_commit_callbacks)
    refuse_in_database("chats_ingestionreceipt", on="UPDATE", column="external_id")

    result = ingest_queued.apply(args=(ids,), throw=False)

    assert result.successful() and result.get() == 3
    assert outcomes(ids) == ["created", "rejected", "created"]
    poison = IngestionReceipt.objects.get(pk=ids[1])
    assert poison.errors == [
        {
            "path": "",
            "message": "the database refused the document (DataError: poison marker refused); nothing of it was stored",
        }
    ]
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["g-1", "g-2"]


def test_a_document_the_database_refuses_is_rejected_and_the_others_of_its_chunk_are_stored(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    ids = enqueue(
        ingest_client, [chat("g-1"), chat("p", f"answer {MARKER}"), chat("g-2")], django_capture_on_commit_callbacks
    )
    refuse_in_database()

    assert ingest_queued.apply(args=(ids,), throw=False).get() == 3

    assert outcomes(ids) == ["created", "rejected", "created"]
    assert "poison marker refused" in IngestionReceipt.objects.get(pk=ids[1]).errors[0]["message"]


def test_a_transient_failure_that_never_heals_retries_to_the_bound_then_rejects_visibly(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a worker runs every attempt: an eager retry is applied again with the eager default of raising, which a
    # worker never does.
    monkeypatch.setattr(ingest_queued.app.conf, "task_eager_propagates", False)
    ids = enqueue(ingest_client, [chat("g-1"), chat("g-2")], django_capture_on_commit_callbacks)
    attempts: list[str] = []

    def unavailable(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FOR UPDATE" in sql and "chats_ingestionreceipt" in sql:  # every attempt's first statement
            attempts.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(unavailable):
        result = ingest_queued.apply(args=(ids,), throw=False)

    assert len(attempts) == MAX_RETRIES + 1
    assert result.successful() and result.get() == 2
    assert outcomes(ids) == ["rejected", "rejected"]
    [error] = IngestionReceipt.objects.get(pk=ids[0]).errors
    assert error["message"] == (
        f"the database was unavailable through {MAX_RETRIES + 1} attempts (OperationalError); nothing of the "
        "document was stored: send it again"
    )
    assert not Conversation.objects.exists()
