"""POST /api/v1/ingest/bulk/?async=true: 202 with a queued receipt per document, applied by the task afterwards.

Without a broker (the tests) the task runs inline once the request's transaction has committed; pytest-django's
test transaction never commits, so `django_capture_on_commit_callbacks(execute=True)` plays the commit, after
the answer. Until then the receipts are exactly what a worker would find: queued.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone
from rest_framework.test import APIClient

from chats.demo.generator import generate
from chats.models import AuditEvent, Conversation, IngestionReceipt, Message, Outcome, Source
from chats.services.audit import CommandActor
from chats.services.ingest_queue import queued_receipts_ingest
from chats.services.receipts import receipt_payloads_prune, receipt_payloads_save
from chats.services.sources import api_key_create
from chats.tasks.ingest import ingest_queued

pytestmark = pytest.mark.django_db

HISTORY = [
    {"role": "user", "content": "Which annealing temperature?"},
    {"role": "assistant", "content": "Five degrees below the primers' melting temperature."},
]
GOOD = {"conversation_id": "a-1", "chat_history": HISTORY}
ALSO_GOOD = {"conversation_id": "a-2", "chat_history": [*HISTORY, {"role": "user", "content": "Thanks."}]}
NO_ROLE = {"chat_history": [{"content": "no role"}]}

Capture = Callable[..., Any]


def post_async(client: APIClient, body: object, query: str = "async=true") -> Any:
    return client.post(f"/api/v1/ingest/bulk/?{query}", data=json.dumps(body), content_type="application/json")


def test_the_answer_is_202_with_a_queued_receipt_per_document_and_the_receipts_say_the_outcome_later(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = post_async(ingest_client, [GOOD, NO_ROLE, ALSO_GOOD])

        assert response.status_code == 202
        body = response.json()
        assert [item["outcome"] for item in body["results"]] == ["queued"] * 3
        assert body["summary"]["queued"] == 3 and body["summary"]["created"] == 0
        assert [item["index"] for item in body["results"]] == [0, 1, 2]
        urls = [item["receipt_url"] for item in body["results"]]
        assert urls == [f"/api/v1/receipts/{item['receipt']}/" for item in body["results"]]
        # Stored before the answer, bytes included, and nothing applied yet.
        assert set(IngestionReceipt.objects.values_list("outcome", flat=True)) == {"queued"}
        assert ingest_client.get(urls[0]).json()["outcome"] == "queued"
        assert ingest_client.get(urls[0]).json()["payload"] == GOOD
        assert not Conversation.objects.exists()
    # The task's sending; then, inline, the search indexing the task's ingestion schedules: once for its set-based
    # batch on PostgreSQL, once per document stored (two) where documents are stored one by one.
    assert len(callbacks) == 1 + (1 if connection.vendor == "postgresql" else 2)

    receipts = [ingest_client.get(url).json() for url in urls]
    assert [r["outcome"] for r in receipts] == ["created", "rejected", "created"]
    assert receipts[1]["errors"][0]["path"] == "/chat_history/0/role"
    assert [r["external_id"] for r in receipts] == ["a-1", "", "a-2"]
    assert [r["messages_added"] for r in receipts] == [2, 0, 3]
    assert [r["format"] for r in receipts] == ["chat_history", "", "chat_history"]
    stored = Conversation.objects.get(external_id="a-2")
    assert receipts[2]["conversation"] == str(stored.uuid) and stored.messages.count() == 3
    created = AuditEvent.objects.filter(action="conversation.created").order_by("id")
    assert [(event.after or {}).get("receipt") for event in created] == [receipts[0]["uuid"], receipts[2]["uuid"]]


def test_a_line_of_ndjson_that_is_not_json_is_rejected_in_the_answer_itself(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    body = "\n".join([json.dumps(GOOD), "{not json", json.dumps(ALSO_GOOD)])

    with django_capture_on_commit_callbacks(execute=True):
        response = ingest_client.post("/api/v1/ingest/bulk/?async=true", data=body, content_type="application/x-ndjson")

    assert response.status_code == 202
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["queued", "rejected", "queued"]
    assert "line 2" in results[1]["errors"][0]["message"] and results[1]["errors"][0]["path"] == "/1"
    assert response.json()["summary"] | {} == {
        "queued": 2, "created": 0, "updated": 0, "unchanged": 0, "rejected": 1
    }  # fmt: skip
    outcomes = [IngestionReceipt.objects.get(uuid=r["receipt"]).outcome for r in results]
    assert outcomes == ["created", "rejected", "created"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (json.dumps(GOOD), "application/json", 400, "a bulk request is a JSON array of documents"),
        ("[{oops", "application/json", 400, "not valid JSON"),
        (json.dumps([GOOD, GOOD, GOOD]), "application/json", 413, "at most 2 per bulk request"),
        (json.dumps([GOOD]), "text/plain", 415, "send a JSON array"),
    ],
)
def test_the_envelope_is_checked_before_anything_is_queued_as_without_async(
    ingest_client: APIClient,
    settings: Any,
    django_capture_on_commit_callbacks: Capture,
    body: str,
    content_type: str,
    status: int,
    message: str,
) -> None:
    settings.MASTERBRAIN_MAX_BULK_ITEMS = 2
    answers = []
    for query in ("async=true", "async=false"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            answers.append(ingest_client.post(f"/api/v1/ingest/bulk/?{query}", data=body, content_type=content_type))
        assert callbacks == []

    assert [a.status_code for a in answers] == [status, status]
    assert message in answers[0].json()["errors"][0]["message"]
    assert answers[0].json()["errors"] == answers[1].json()["errors"]
    assert not IngestionReceipt.objects.filter(outcome=Outcome.QUEUED).exists()


def test_async_takes_true_or_false_only(ingest_client: APIClient) -> None:
    response = post_async(ingest_client, [GOOD], query="async=maybe")

    assert response.status_code == 400 and response.json()["errors"][0]["message"] == "async is true or false"
    assert not IngestionReceipt.objects.exists()


def test_the_async_answer_refuses_a_signed_in_person_without_a_key(api_client: APIClient, reviewer: Any) -> None:
    api_client.force_login(reviewer)

    response = post_async(api_client, [GOOD])

    assert response.status_code == 401
    assert not IngestionReceipt.objects.exists()


def _documents() -> list[Any]:
    documents = [document for _, document in generate(12, seed=5, turns=(1, 3), result_size=(50, 200))]
    longer = {"conversation_id": "a-1", "chat_history": [*HISTORY, {"role": "user", "content": "And GC-rich?"}]}
    # A repeat, a document that extends another of the same request, and one refused.
    return [*documents, copy.deepcopy(documents[2]), GOOD, longer, NO_ROLE]


@pytest.mark.postgres
def test_async_and_sync_store_the_same_rows_for_the_same_documents(
    django_capture_on_commit_callbacks: Capture,
) -> None:
    from tests.services.test_bulk_writer import snapshot

    answers, receipts = {}, {}
    for mode in ("sync", "async"):
        source = Source.objects.create(name=mode)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(source=source, name=mode)[1]}")
        with django_capture_on_commit_callbacks(execute=True):
            response = post_async(client, _documents(), query=f"async={'true' if mode == 'async' else 'false'}")
        assert response.status_code == (202 if mode == "async" else 200)
        answers[mode] = snapshot(source)
        receipts[mode] = [
            (r.outcome, r.external_id, r.input_format, r.messages_added, r.warnings, r.errors, r.payload_sha256)
            for r in (IngestionReceipt.objects.get(uuid=item["receipt"]) for item in response.json()["results"])
        ]

    assert receipts["async"] == receipts["sync"]
    assert {r[0] for r in receipts["sync"]} == {"created", "updated", "unchanged", "rejected"}
    for table in ("conversations", "messages", "tool_calls", "artifacts", "feedback"):
        assert answers["async"][table] == answers["sync"][table], table
    assert len(answers["sync"]["conversations"]) == 13


def test_a_task_delivered_again_skips_the_receipts_it_already_applied(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        post_async(ingest_client, [GOOD, ALSO_GOOD])
    ids = list(IngestionReceipt.objects.order_by("pk").values_list("pk", flat=True))
    before = (AuditEvent.objects.count(), Message.objects.count(), list(IngestionReceipt.objects.values()))

    assert ingest_queued.delay(ids).get() == 0
    assert queued_receipts_ingest(receipt_ids=ids) == 0

    assert (AuditEvent.objects.count(), Message.objects.count(), list(IngestionReceipt.objects.values())) == before


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_a_transient_database_error_retries_the_task(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture, error: type[Exception]
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        post_async(ingest_client, [GOOD])
    failures: list[str] = []

    def fail_once(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "chats_ingestionreceipt" in sql and not failures:  # the task's first statement: lock its receipts
            failures.append(sql)
            raise error("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    ids = [IngestionReceipt.objects.get().pk]
    with connection.execute_wrapper(fail_once):
        # As a worker runs it: a failure is the task's state, not raised to the caller.
        result = ingest_queued.apply(args=(ids,), throw=False)

    assert len(failures) == 1
    assert result.successful() and result.get() == 1  # the retry applied the one receipt
    assert IngestionReceipt.objects.get().outcome == "created"
    assert Conversation.objects.get().external_id == "a-1"


def test_requeue_ingest_sends_again_what_is_still_queued_after_the_given_minutes(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    # The tasks of these two requests are never sent: a broker that lost them.
    with django_capture_on_commit_callbacks(execute=False):
        old = post_async(ingest_client, [GOOD]).json()["results"][0]["receipt"]
    with django_capture_on_commit_callbacks(execute=False):
        recent = post_async(ingest_client, [ALSO_GOOD]).json()["results"][0]["receipt"]
    IngestionReceipt.objects.filter(uuid=old).update(created_at=timezone.now() - timedelta(minutes=20))

    with django_capture_on_commit_callbacks(execute=True):
        call_command("requeue_ingest", "--minutes", "15", stdout=(out := io.StringIO()))

    assert "Sent 1 receipt(s)" in out.getvalue()
    assert IngestionReceipt.objects.get(uuid=old).outcome == "created"
    assert IngestionReceipt.objects.get(uuid=recent).outcome == "queued"
    assert list(Conversation.objects.values_list("external_id", flat=True)) == ["a-1"]


def test_a_prune_keeps_the_bytes_of_documents_still_queued(
    ingest_client: APIClient, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        post_async(ingest_client, [GOOD])

    result = receipt_payloads_prune(older_than_days=0, actor=CommandActor("prune_receipt_payloads"))

    assert result.receipts == 0
    assert IngestionReceipt.objects.get().payload is not None


def test_the_schema_documents_async_and_the_202_answer(api_client: APIClient) -> None:
    schema = yaml.safe_load(api_client.get("/api/v1/schema/").content)
    operation = schema["paths"]["/api/v1/ingest/bulk/"]["post"]

    [parameter] = [p for p in operation["parameters"] if p["name"] == "async"]
    assert parameter["in"] == "query" and parameter["schema"]["type"] == "boolean"
    queued = operation["responses"]["202"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    item = schema["components"]["schemas"][queued]["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[1]
    assert "receipt_url" in schema["components"]["schemas"][item]["properties"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_workers_given_the_same_receipts_at_once_apply_each_document_once(source: Source) -> None:
    documents = [document for _, document in generate(20, seed=9, turns=(1, 2), result_size=(50, 100))]
    contents = [json.dumps(document).encode() for document in documents]
    # Receipts as a request leaves them, whose task is not sent (here the commit would run it inline).
    receipt_payloads_save(contents)
    digests = [hashlib.sha256(content).hexdigest() for content in contents]
    ids = [
        IngestionReceipt.objects.create(
            source=source, outcome=Outcome.QUEUED, payload_id=digest, payload_sha256=digest, size_bytes=len(content)
        ).pk
        for digest, content in zip(digests, contents, strict=True)
    ]
    start = threading.Barrier(2)
    applied: list[int] = []

    def worker() -> None:
        try:
            start.wait()
            applied.append(queued_receipts_ingest(receipt_ids=ids))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(applied) == [0, 20]  # one took the lock and applied them; the other then found them done
    assert Conversation.objects.filter(source=source).count() == 20
    assert AuditEvent.objects.filter(action="conversation.created").count() == 20
    assert not IngestionReceipt.objects.filter(outcome=Outcome.QUEUED).exists()
