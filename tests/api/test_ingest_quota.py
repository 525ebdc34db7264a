"""MASTERBRAIN_KEY_DAILY_BYTES: the bytes one API key may send to ingest per UTC day, checked before a body is
decoded; beyond, 429 with Retry-After and nothing stored. Each key counts on its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import ApiKey, ApiKeyDailyUsage, Conversation, IngestionReceipt, ReceiptPayload, Source
from chats.services.sources import api_key_create

pytestmark = pytest.mark.django_db


def document(n: int) -> bytes:
    """Documents of one size: each a new conversation."""
    body = {"conversation_id": f"quota-{n:04d}", "chat_history": [{"role": "user", "content": "Hello there"}]}
    return json.dumps(body).encode()


SIZE = len(document(0))


def client_of(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    return client


def stored() -> tuple[int, int, int]:
    return Conversation.objects.count(), IngestionReceipt.objects.count(), ReceiptPayload.objects.count()


def used_today(raw_key: str) -> int:
    key = ApiKey.objects.get(key_hash=ApiKey.hash_key(raw_key))
    today = timezone.now().astimezone(UTC).date()
    usage = ApiKeyDailyUsage.objects.filter(api_key=key, day=today).values_list("bytes_received", flat=True)
    return usage.first() or 0


def seconds_to_midnight_utc() -> float:
    now = datetime.now(UTC)
    return (datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC) - now).total_seconds()


def test_a_key_past_its_daily_bytes_gets_429_with_retry_after_and_nothing_is_stored(
    ingest_client: APIClient, ingest_key: str, settings: Any
) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = 3 * SIZE
    sent = [ingest_client.post("/api/v1/ingest/", document(n), content_type="application/json") for n in range(3)]
    assert [r.status_code for r in sent] == [201, 201, 201]
    before = stored()

    refused = ingest_client.post("/api/v1/ingest/", document(3), content_type="application/json")

    assert refused.status_code == 429
    [error] = refused.json()["errors"]  # the API's one error shape
    assert error["path"] == "" and f"has sent {3 * SIZE} of its {3 * SIZE} bytes for today" in error["message"]
    assert abs(int(refused["Retry-After"]) - seconds_to_midnight_utc()) <= 2
    assert stored() == before
    assert used_today(ingest_key) == 3 * SIZE  # the refused body is not counted


def test_the_quota_is_checked_before_the_body_is_decoded(
    ingest_client: APIClient, ingest_key: str, settings: Any
) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = SIZE
    ingest_client.post("/api/v1/ingest/", document(0), content_type="application/json")
    before = stored()

    # Not JSON: decoded, it would be refused with 400 and kept in a receipt; over the quota it is not even read as JSON.
    refused = ingest_client.post("/api/v1/ingest/", b"{not json", content_type="application/json")

    assert refused.status_code == 429 and "receipt" not in refused.json()
    assert stored() == before


def test_the_bulk_endpoint_counts_the_whole_body_against_the_same_quota(
    ingest_client: APIClient, ingest_key: str, settings: Any
) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = 4 * SIZE
    ingest_client.post("/api/v1/ingest/", document(0), content_type="application/json")
    lines = b"\n".join(document(n) for n in range(1, 4))
    assert len(lines) > 3 * SIZE  # three documents and their line breaks: more than what is left
    before = stored()

    as_ndjson = ingest_client.post("/api/v1/ingest/bulk/", lines, content_type="application/x-ndjson")
    as_array = ingest_client.post(
        "/api/v1/ingest/bulk/", b"[" + lines.replace(b"\n", b",") + b"]", content_type="application/json"
    )

    assert (as_ndjson.status_code, as_array.status_code) == (429, 429)
    assert stored() == before
    fits = ingest_client.post(
        "/api/v1/ingest/bulk/", b"\n".join([document(1), document(2)]), content_type="application/x-ndjson"
    )
    assert fits.status_code == 200 and fits.json()["summary"]["created"] == 2
    assert used_today(ingest_key) == SIZE + len(document(1)) + 1 + len(document(2))


def test_each_key_counts_on_its_own(ingest_client: APIClient, ingest_key: str, source: Source, settings: Any) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = SIZE
    _, second_key = api_key_create(source=source, name="second host")
    assert ingest_client.post("/api/v1/ingest/", document(0), content_type="application/json").status_code == 201
    assert ingest_client.post("/api/v1/ingest/", document(1), content_type="application/json").status_code == 429

    other = client_of(second_key).post("/api/v1/ingest/", document(1), content_type="application/json")

    assert other.status_code == 201
    assert (used_today(ingest_key), used_today(second_key)) == (SIZE, SIZE)


def test_yesterdays_bytes_do_not_count_today(ingest_client: APIClient, ingest_key: str, settings: Any) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = SIZE
    key = ApiKey.objects.get(key_hash=ApiKey.hash_key(ingest_key))
    yesterday = timezone.now().astimezone(UTC).date() - timedelta(days=1)
    ApiKeyDailyUsage.objects.create(api_key=key, day=yesterday, bytes_received=SIZE)

    assert ingest_client.post("/api/v1/ingest/", document(0), content_type="application/json").status_code == 201


def test_a_body_larger_than_a_whole_days_quota_gets_413(ingest_client: APIClient, settings: Any) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = SIZE - 1

    response = ingest_client.post("/api/v1/ingest/", document(0), content_type="application/json")

    assert response.status_code == 413 and "at most" in response.json()["errors"][0]["message"]
    assert "Retry-After" not in response
    assert stored() == (0, 0, 0)


def test_no_quota_counts_the_bytes_and_refuses_nothing(
    ingest_client: APIClient, ingest_key: str, settings: Any
) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = 0

    codes = [
        ingest_client.post("/api/v1/ingest/", document(n), content_type="application/json").status_code
        for n in range(5)
    ]

    assert codes == [201] * 5 and used_today(ingest_key) == 5 * SIZE
