"""POST /api/v1/ingest/, /api/v1/ingest/bulk/ and GET /api/v1/receipts/<uuid>/ over the real HTTP stack."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from rest_framework.test import APIClient

from chats.models import ApiKey, Conversation, IngestionReceipt, Message
from chats.services.sources import api_key_revoke

if TYPE_CHECKING:
    # Exists only in the DRF stubs: the test client's response, with .json() and the request that made it.
    from rest_framework.response import _MonkeyPatchedResponse

HISTORY = [
    {"role": "user", "content": "Who are you?"},
    {"role": "assistant", "content": "I am Airalogy Masterbrain."},
]
DOCUMENT = {"conversation_id": "123456", "chat_history": HISTORY}

# engines: bulk ingest takes the set-based path on PostgreSQL only; CI runs this file again on SQLite.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]


def post_json(client: APIClient, url: str, body: object) -> _MonkeyPatchedResponse:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_posting_a_document_creates_a_conversation(ingest_client):
    response = post_json(ingest_client, "/api/v1/ingest/", DOCUMENT)

    assert response.status_code == 201
    body = response.json()
    assert body["outcome"] == "created" and body["format"] == "chat_history" and body["external_id"] == "123456"
    assert Conversation.objects.get().uuid.hex == body["conversation"].replace("-", "")
    assert body["warnings"] == []


def test_posting_it_again_answers_200_unchanged(ingest_client):
    post_json(ingest_client, "/api/v1/ingest/", DOCUMENT)

    response = post_json(ingest_client, "/api/v1/ingest/", DOCUMENT)

    assert response.status_code == 200 and response.json()["outcome"] == "unchanged"


def test_a_named_format_is_used_and_external_id_names_an_anonymous_conversation(ingest_client):
    response = post_json(ingest_client, "/api/v1/ingest/?format=openai&external_id=case-7", HISTORY)

    assert response.status_code == 201
    assert response.json()["external_id"] == "case-7" and response.json()["format"] == "openai"


def test_a_named_format_that_does_not_match_says_what_was_expected(ingest_client):
    response = post_json(ingest_client, "/api/v1/ingest/?format=chat_graph", DOCUMENT)

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert "chat_graph" in error["message"] and "nodes" in error["message"]
    assert Conversation.objects.count() == 0


def test_an_invalid_message_is_rejected_with_its_json_path(ingest_client):
    document = {
        "chat_id": "c1",
        "main_messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [42]},
        ],
    }

    response = post_json(ingest_client, "/api/v1/ingest/", document)

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/main_messages/1/content/0"
    assert IngestionReceipt.objects.get().outcome == "rejected"


def test_a_message_without_a_role_is_rejected_with_its_path(ingest_client):
    response = post_json(ingest_client, "/api/v1/ingest/", {"chat_history": [{"content": "x"}]})

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/chat_history/0/role"


def test_a_body_that_is_not_json_gets_400_with_line_and_column_and_a_receipt(ingest_client):
    response = ingest_client.post(
        "/api/v1/ingest/", data=b'{"chat_history": [\n  {"role": }', content_type="application/json"
    )

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert "line 2" in error["message"] and "column" in error["message"]
    receipt = IngestionReceipt.objects.select_related("payload").get(uuid=response.json()["receipt"])
    assert receipt.payload is not None and receipt.payload.content == b'{"chat_history": [\n  {"role": }'


def test_a_wrong_content_type_gets_415(ingest_client):
    response = ingest_client.post("/api/v1/ingest/", data="role=user", content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415
    assert response.json()["errors"][0]["message"].startswith("send the document as")


def test_a_body_over_the_limit_gets_413(ingest_client, settings):
    settings.MASTERBRAIN_MAX_BODY_BYTES = 2048
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048

    response = post_json(ingest_client, "/api/v1/ingest/", {"chat_history": [{"role": "user", "content": "x" * 5000}]})

    assert response.status_code == 413
    assert "2048" in response.json()["errors"][0]["message"]


def test_too_many_messages_gets_413(ingest_client, settings):
    settings.MASTERBRAIN_MAX_MESSAGES = 1

    response = post_json(ingest_client, "/api/v1/ingest/", DOCUMENT)

    assert response.status_code == 413 and response.json()["errors"][0]["path"] == ""


def test_no_key_gets_401(api_client):
    response = post_json(api_client, "/api/v1/ingest/", DOCUMENT)

    assert response.status_code == 401 and response.json()["errors"]


def test_an_unknown_key_gets_401(api_client):
    api_client.credentials(HTTP_AUTHORIZATION="Api-Key mb_not-a-real-key")

    assert post_json(api_client, "/api/v1/ingest/", DOCUMENT).status_code == 401


def test_a_revoked_key_gets_401(ingest_client, ingest_key):
    api_key_revoke(key=ApiKey.objects.get(key_hash=ApiKey.hash_key(ingest_key)))

    assert post_json(ingest_client, "/api/v1/ingest/", DOCUMENT).status_code == 401


def test_a_key_writes_only_into_its_own_source(ingest_client, other_source, other_ingest_key):
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    post_json(other, "/api/v1/ingest/", DOCUMENT)
    untouched = list(Message.objects.order_by("id").values_list("id", "text"))

    response = post_json(
        ingest_client,
        "/api/v1/ingest/",
        {**DOCUMENT, "chat_history": [*HISTORY, {"role": "user", "content": "more"}]},
    )

    assert response.json()["outcome"] == "created"
    assert Conversation.objects.count() == 2
    assert (
        list(Message.objects.filter(conversation__source=other_source).order_by("id").values_list("id", "text"))
        == untouched
    )


def test_bulk_stores_good_items_even_when_others_fail(ingest_client):
    documents = [
        DOCUMENT,
        {"chat_history": [{"content": "no role"}]},
        {"conversation_id": "2", "chat_history": HISTORY},
    ]

    response = post_json(ingest_client, "/api/v1/ingest/bulk/", documents)

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["created", "rejected", "created"]
    assert [r["index"] for r in results] == [0, 1, 2]
    assert results[1]["errors"][0]["path"] == "/1/chat_history/0/role"
    assert Conversation.objects.count() == 2


def test_bulk_accepts_ndjson_and_reports_a_bad_line(ingest_client):
    body = "\n".join([json.dumps(DOCUMENT), "{not json", json.dumps({"conversation_id": "9", "chat_history": HISTORY})])

    response = ingest_client.post("/api/v1/ingest/bulk/", data=body, content_type="application/x-ndjson")

    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["created", "rejected", "created"]
    assert "line 2" in results[1]["errors"][0]["message"]
    # The bad line is kept, like every attempt, in a receipt of its own.
    receipt = IngestionReceipt.objects.select_related("payload").get(uuid=results[1]["receipt"])
    assert receipt.payload is not None
    assert receipt.outcome == "rejected" and receipt.payload.content == b"{not json"
    assert results[1]["errors"][0]["path"] == "/1"  # under its index, like every other item's errors
    assert receipt.errors == [{**results[1]["errors"][0], "path": ""}]
    assert IngestionReceipt.objects.count() == 3


def test_bulk_over_the_item_limit_gets_413(ingest_client, settings):
    settings.MASTERBRAIN_MAX_BULK_ITEMS = 2

    response = post_json(ingest_client, "/api/v1/ingest/bulk/", [DOCUMENT, DOCUMENT, DOCUMENT])

    assert response.status_code == 413 and Conversation.objects.count() == 0


def test_bulk_that_is_not_an_array_gets_400(ingest_client):
    response = post_json(ingest_client, "/api/v1/ingest/bulk/", DOCUMENT)

    assert response.status_code == 400 and response.json()["errors"][0]["path"] == ""
    receipt = IngestionReceipt.objects.select_related("payload").get(uuid=response.json()["receipt"])
    assert receipt.payload is not None
    assert receipt.outcome == "rejected" and json.loads(receipt.payload.content) == DOCUMENT


def test_a_receipt_is_returned_to_its_own_source_only(ingest_client, other_ingest_key):
    receipt = post_json(ingest_client, "/api/v1/ingest/", DOCUMENT).json()["receipt"]
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    mine = ingest_client.get(f"/api/v1/receipts/{receipt}/")

    assert mine.status_code == 200 and mine.json()["outcome"] == "created" and mine.json()["payload"] == DOCUMENT
    assert other.get(f"/api/v1/receipts/{receipt}/").status_code == 404


def test_a_nul_character_is_refused_with_its_path_not_a_server_error(ingest_client):
    document = {"conversation_id": "n", "chat_history": [{"role": "user", "content": "bad\u0000byte"}]}

    response = post_json(ingest_client, "/api/v1/ingest/", document)

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/chat_history/0/content"
    assert Conversation.objects.count() == 0


def test_a_raw_nul_byte_in_a_body_that_is_not_json_is_kept_in_the_receipt(ingest_client):
    response = ingest_client.post("/api/v1/ingest/", data=b'{"a": "x\x00', content_type="application/json")

    assert response.status_code == 400
    receipt = IngestionReceipt.objects.select_related("payload").get()
    assert receipt.payload is not None
    assert receipt.payload.content == b'{"a": "x\x00' and "\\x00" in receipt.payload.shown.text


def test_nan_and_infinity_are_not_json(ingest_client):
    response = ingest_client.post(
        "/api/v1/ingest/", data=b'{"chat_history": [], "x": NaN}', content_type="application/json"
    )

    assert response.status_code == 400 and "NaN" in response.json()["errors"][0]["message"]


def test_an_unpaired_surrogate_is_refused_with_its_path_not_a_server_error(ingest_client):
    body = b'{"conversation_id": "s", "chat_history": [{"role": "user", "content": "half \\ud800 a pair"}]}'

    response = ingest_client.post("/api/v1/ingest/", data=body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/chat_history/0/content"
    assert "surrogate" in response.json()["errors"][0]["message"]
    assert IngestionReceipt.objects.get().outcome == "rejected" and Conversation.objects.count() == 0
