"""Receipts over the HTTP stack: each attempt's payload is the bytes it sent, stored once however often they are
sent; GET /api/v1/receipts/<uuid>/ shows it decoded and /payload/ gives the bytes back exactly."""

from __future__ import annotations

import hashlib
import json
import random
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import IngestionReceipt, ReceiptPayload
from chats.services.receipts import receipt_payloads_prune

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse

pytestmark = pytest.mark.django_db

DOCUMENT = {
    "conversation_id": "receipts-1",
    "chat_history": [
        {"role": "user", "content": "Who are you?"},
        {"role": "assistant", "content": "I am Airalogy Masterbrain."},
    ],
}


def post(
    client: APIClient, body: bytes, url: str = "/api/v1/ingest/", kind: str = "application/json"
) -> _MonkeyPatchedResponse:
    return client.post(url, data=body, content_type=kind)


def stored_payload(receipt_uuid: str) -> ReceiptPayload:
    payload = IngestionReceipt.objects.select_related("payload").get(uuid=receipt_uuid).payload
    assert payload is not None
    return payload


def test_resending_the_same_body_stores_one_payload_and_a_receipt_each_time(ingest_client: APIClient) -> None:
    body = json.dumps(DOCUMENT, indent=2).encode()  # as a client formats it: whitespace and key order kept

    responses = [post(ingest_client, body) for _ in range(4)]

    assert [r.json()["outcome"] for r in responses] == ["created", "unchanged", "unchanged", "unchanged"]
    assert IngestionReceipt.objects.count() == 4
    payload = ReceiptPayload.objects.get()
    assert payload.content == body
    digest = hashlib.sha256(body).hexdigest()
    assert set(IngestionReceipt.objects.values_list("payload_id", "payload_sha256", "size_bytes")) == {
        (digest, digest, len(body))
    }


def test_a_body_that_is_not_utf8_is_stored_as_its_bytes_not_as_escaped_text(ingest_client: APIClient) -> None:
    generator = random.Random(3)
    body = bytes(generator.randrange(0x80, 0xC0) for _ in range(16_384))  # never UTF-8

    response = post(ingest_client, body)

    assert response.status_code == 400 and "not UTF-8" in response.json()["errors"][0]["message"]
    receipt = IngestionReceipt.objects.select_related("payload").get(uuid=response.json()["receipt"])
    assert receipt.payload is not None
    assert receipt.payload.content == body
    assert receipt.size_bytes == receipt.payload.size_bytes == len(body)
    # Stored as bytes (compressed: at most its own size and a header), where escaped text took 4 bytes per byte.
    assert len(receipt.payload.compressed) <= len(body) + 64
    shown = ingest_client.get(f"/api/v1/receipts/{receipt.uuid}/").json()
    assert shown["payload"] is None and shown["payload_pruned"] is False
    assert shown["payload_text"] == "".join(f"\\x{byte:02x}" for byte in body)
    raw = ingest_client.get(f"/api/v1/receipts/{receipt.uuid}/payload/")
    assert raw.status_code == 200 and raw["Content-Type"] == "application/octet-stream"
    assert raw.content == body


def test_the_receipt_shows_a_json_payload_as_the_document_and_gives_back_its_exact_bytes(
    ingest_client: APIClient,
) -> None:
    body = b'{"chat_history": [{"content": "Who are you?", "role": "user"}],\n "conversation_id": "exact"}'
    receipt = post(ingest_client, body).json()["receipt"]

    shown = ingest_client.get(f"/api/v1/receipts/{receipt}/").json()
    raw = ingest_client.get(f"/api/v1/receipts/{receipt}/payload/")

    assert shown["payload"] == json.loads(body) and shown["payload_text"] is None
    assert shown["payload_sha256"] == hashlib.sha256(body).hexdigest() and shown["size_bytes"] == len(body)
    assert raw.content == body and "attachment" in raw["Content-Disposition"]


def test_each_document_of_a_bulk_array_keeps_its_own_bytes(ingest_client: APIClient) -> None:
    first = b'{"conversation_id": "b-1", "chat_history": [{"role": "user", "content": "a, [b]"}]}'
    second = b'{ "conversation_id" : "b-2",\n  "chat_history": [{"role": "user", "content": "}"}] }'
    body = b"[\n  " + first + b" ,\n  " + second + b"\n]\n"

    results = post(ingest_client, body, "/api/v1/ingest/bulk/").json()["results"]

    assert [r["outcome"] for r in results] == ["created", "created"]
    assert [stored_payload(r["receipt"]).content for r in results] == [first, second]


def test_each_ndjson_line_keeps_its_own_bytes_and_a_line_sent_twice_is_stored_once(ingest_client: APIClient) -> None:
    line = b'{"conversation_id": "n-1", "chat_history": [{"role": "user", "content": "Hello"}]}'
    body = b"\n".join([line, b"{not json", line])

    results = post(ingest_client, body, "/api/v1/ingest/bulk/", "application/x-ndjson").json()["results"]

    assert [r["outcome"] for r in results] == ["created", "rejected", "unchanged"]
    assert [stored_payload(r["receipt"]).content for r in results] == [line, b"{not json", line]
    assert ReceiptPayload.objects.count() == 2


def test_a_pruned_receipt_keeps_its_hash_and_size_and_its_payload_is_gone(
    ingest_client: APIClient, admin_user: User
) -> None:
    body = json.dumps(DOCUMENT).encode()
    receipt = post(ingest_client, body).json()["receipt"]
    receipt_payloads_prune(older_than_days=0, actor=admin_user)

    shown = ingest_client.get(f"/api/v1/receipts/{receipt}/").json()
    raw = ingest_client.get(f"/api/v1/receipts/{receipt}/payload/")

    assert shown["payload_pruned"] is True and shown["payload"] is None and shown["payload_text"] is None
    assert (shown["outcome"], shown["payload_sha256"], shown["size_bytes"]) == (
        "created",
        hashlib.sha256(body).hexdigest(),
        len(body),
    )
    assert raw.status_code == 410 and raw.json()["errors"][0]["message"].startswith("the payload was removed")


def test_a_receipts_bytes_are_given_to_its_own_source_only(ingest_client: APIClient, other_ingest_key: str) -> None:
    receipt = post(ingest_client, json.dumps(DOCUMENT).encode()).json()["receipt"]
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    assert other.get(f"/api/v1/receipts/{receipt}/payload/").status_code == 404
    assert APIClient().get(f"/api/v1/receipts/{receipt}/payload/").status_code == 401
