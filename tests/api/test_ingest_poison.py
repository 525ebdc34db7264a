"""Poison documents cost only themselves: a document the boundary refuses, or one the database refuses, becomes a
rejected result with its own readable receipt, and the documents before and after it are stored, in a single
request, a bulk request (JSON array and NDJSON) and an asynchronous bulk request applied by the worker. No receipt
stays `queued`.

The database's refusal is real: a PostgreSQL trigger installed by the test raises a data exception (SQLSTATE
22000, a DataError) for a message holding a marker, wherever the writer inserts it (the batch's COPY, the row-by-row
writer). The worker's task runs inline, as in tests/api/test_ingest_async.py: `django_capture_on_commit_callbacks`
plays the request's commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from chats.models import Conversation, IngestionReceipt, Message, ToolCall
from tests.factories.poison import BOUNDARY_POISON, DATABASE_POISON, chat, refuse_in_database

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

Capture = Callable[..., Any]


def with_arguments(chat_id: str, arguments: str) -> dict[str, Any]:
    document = chat(chat_id)
    document["chat_history"][1] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}],
    }
    document["chat_history"].append({"role": "tool", "tool_call_id": "c1", "content": "55 C"})
    return document


@pytest.fixture
def refusing_trigger(db: None) -> None:
    """A real trigger (rolled back with the test's transaction) that refuses a message holding the marker."""
    refuse_in_database()


def array(*items: str) -> str:
    return "[" + ", ".join(items) + "]"


def post_bulk(client: APIClient, body: str, query: str = "", content_type: str = "application/json") -> Any:
    return client.post(f"/api/v1/ingest/bulk/{query}", data=body.encode(), content_type=content_type)


def key_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    return client


def assert_readable_rejection(client: APIClient, receipt: str, message: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/receipts/{receipt}/")
    assert response.status_code == 200
    body: dict[str, Any] = json.loads(response.content)  # the bytes are JSON whatever the payload holds
    assert body["outcome"] == "rejected" and body["conversation"] is None
    assert any(message in error["message"] for error in body["errors"]), body["errors"]
    return body


# --- JSON inside text: stored, with the text as received -----------------------------------------------------


@pytest.mark.parametrize("arguments", ['{"a": "\\u0000"}', '{"a": "\\ud800"}'], ids=["nul", "surrogate"])
def test_single_ingest_of_arguments_decoding_to_unstorable_json_stores_the_text_and_no_parse(
    ingest_client: APIClient, arguments: str
) -> None:
    response = ingest_client.post(
        "/api/v1/ingest/", data=json.dumps(with_arguments("args", arguments)), content_type="application/json"
    )

    assert response.status_code == 201, response.content
    call = ToolCall.objects.get()
    assert call.arguments == arguments and call.parsed_arguments is None
    assert call.arguments_error.startswith("valid JSON, but the decoded value cannot be stored (at '/a': ")
    assert any(w["path"] == "/chat_history/1/tool_calls/0" for w in response.json()["warnings"])


def test_a_record_qa_injection_result_decoding_to_unstorable_json_keeps_its_text(ingest_client: APIClient) -> None:
    protocol = "airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1"
    result = '{"protocols": [{"airalogy_protocol_id": "' + protocol + '", "note": "\\u0000"}]}'
    document = {
        "chat_id": "qa-1",
        "context": {"inject_airalogy_protocols": True},
        "main_messages": [
            {"role": "user", "content": "Which protocol?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "inject_airalogy_protocols", "arguments": json.dumps({"airalogy_protocol_ids": [protocol]}),
            }}]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
    }  # fmt: skip

    response = ingest_client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")

    assert response.status_code == 201, response.content
    assert Message.objects.get(role="tool").text == result
    conversation = Conversation.objects.get()
    [artifact] = conversation.artifacts.all()
    assert (artifact.artifact_id, artifact.resolved, artifact.payload) == (protocol, False, None)


# --- A bad item costs only itself ------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["application/json", "application/x-ndjson"])
def test_a_bulk_body_stores_the_documents_around_one_the_database_refuses(
    ingest_client: APIClient, refusing_trigger: None, content_type: str
) -> None:
    items = [json.dumps(chat("g-1")), DATABASE_POISON, json.dumps(chat("g-2"))]
    body = array(*items) if content_type == "application/json" else "\n".join(items)

    response = post_bulk(ingest_client, body, content_type=content_type)

    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["created", "rejected", "created"]
    assert results[1]["errors"][0]["path"] == "/1"
    assert "DataError: poison marker refused" in results[1]["errors"][0]["message"]
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["g-1", "g-2"]
    receipt = assert_readable_rejection(ingest_client, results[1]["receipt"], "poison marker refused")
    assert receipt["payload"] == json.loads(DATABASE_POISON)
    assert IngestionReceipt.objects.count() == 3


def test_a_single_document_the_database_refuses_answers_400_with_its_receipt(
    ingest_client: APIClient, refusing_trigger: None
) -> None:
    response = ingest_client.post("/api/v1/ingest/", data=DATABASE_POISON, content_type="application/json")

    assert response.status_code == 400
    assert not Conversation.objects.exists()
    assert_readable_rejection(ingest_client, response.json()["receipt"], "poison marker refused")


def test_a_bulk_of_good_documents_is_still_written_as_one_batch(
    ingest_client: APIClient, django_assert_max_num_queries: Any
) -> None:
    # The fallback costs nothing when nothing fails: no per-document statements (a row-by-row write of three
    # documents takes far more).
    with django_assert_max_num_queries(15):  # 11 today; one by one, these three documents take about 50
        response = post_bulk(ingest_client, array(*(json.dumps(chat(f"g-{n}")) for n in range(3))))
    assert [r["outcome"] for r in response.json()["results"]] == ["created"] * 3


# --- Receipts render whatever they hold ------------------------------------------------------------------------


def test_the_receipt_of_a_document_rejected_for_a_lone_surrogate_is_readable_json(ingest_client: APIClient) -> None:
    response = ingest_client.post("/api/v1/ingest/", data=BOUNDARY_POISON, content_type="application/json")
    assert response.status_code == 400

    read = ingest_client.get(f"/api/v1/receipts/{response.json()['receipt']}/")

    assert read.status_code == 200
    assert b"\\ud800" in read.content  # escaped, as it was sent
    assert read.content.decode("ascii")  # every byte is ASCII: nothing a UTF-8 decoder trips on
    body = json.loads(read.content)
    assert body["payload"]["chat_history"][0]["content"] == "bad \ud800"  # exactly what was sent
    assert body["errors"][0]["path"] == "/chat_history/0/content"


def test_an_ordinary_receipt_keeps_its_text_unescaped(ingest_client: APIClient) -> None:
    response = ingest_client.post(
        "/api/v1/ingest/", data=json.dumps(chat("café"), ensure_ascii=False), content_type="application/json"
    )
    read = ingest_client.get(f"/api/v1/receipts/{response.json()['receipt']}/")
    assert "café".encode() in read.content


def test_the_schema_says_a_receipts_conversation_may_be_null(api_client: APIClient) -> None:
    schema = yaml.safe_load(api_client.get("/api/v1/schema/").content)
    conversation = schema["components"]["schemas"]["Receipt"]["properties"]["conversation"]
    assert conversation["nullable"] is True


# --- The Done-when test: kills nothing, loses nothing ----------------------------------------------------------


@pytest.mark.parametrize(
    ("sync_poison", "async_poison"),
    [(BOUNDARY_POISON, DATABASE_POISON), (DATABASE_POISON, BOUNDARY_POISON)],
    ids=["boundary-sync-database-async", "database-sync-boundary-async"],
)
def test_good_poison_good_from_two_sources_sync_and_async_stores_four_and_rejects_two_readably(
    ingest_key: str,
    other_ingest_key: str,
    refusing_trigger: None,
    django_capture_on_commit_callbacks: Capture,
    sync_poison: str,
    async_poison: str,
) -> None:
    first, second = key_client(ingest_key), key_client(other_ingest_key)

    sync = post_bulk(first, array(json.dumps(chat("a-1")), sync_poison, json.dumps(chat("a-2"))))
    with django_capture_on_commit_callbacks(execute=True):  # the worker's task, inline, once the request commits
        queued = post_bulk(
            second, array(json.dumps(chat("b-1")), async_poison, json.dumps(chat("b-2"))), query="?async=true"
        )

    assert sync.status_code == 200 and queued.status_code == 202
    assert [r["outcome"] for r in sync.json()["results"]] == ["created", "rejected", "created"]
    assert [r["outcome"] for r in queued.json()["results"]] == ["queued"] * 3
    stored = Conversation.objects.values_list("source__name", "external_id").order_by("source__name", "external_id")
    assert list(stored) == [
        ("masterbrain", "a-1"),
        ("masterbrain", "a-2"),
        ("other-logger", "b-1"),
        ("other-logger", "b-2"),
    ]
    assert not IngestionReceipt.objects.filter(outcome="queued").exists()
    later = [second.get(r["receipt_url"]).json() for r in queued.json()["results"]]
    assert [r["outcome"] for r in later] == ["created", "rejected", "created"]
    reasons = {BOUNDARY_POISON: "unpaired UTF-16 surrogate", DATABASE_POISON: "poison marker refused"}
    assert_readable_rejection(first, sync.json()["results"][1]["receipt"], reasons[sync_poison])
    assert_readable_rejection(second, later[1]["uuid"], reasons[async_poison])
    assert IngestionReceipt.objects.filter(outcome="rejected").count() == 2
