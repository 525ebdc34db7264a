"""API keys expire and are revoked; ingest is throttled per key. Over the real HTTP stack, with the counters in
the configured cache. (Failed sign-ins: tests/security/test_signin.py.)"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import cast

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import ApiKey, Conversation, Source
from chats.services.sources import api_key_create, api_key_revoke

pytestmark = pytest.mark.django_db

DOCUMENT = {"conversation_id": "k-1", "chat_history": [{"role": "user", "content": "Hello"}]}


def ingest(raw_key: str, external_id: str = "k-1") -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    body = {**DOCUMENT, "conversation_id": external_id}
    return client.post("/api/v1/ingest/", data=json.dumps(body), content_type="application/json").status_code


# ---- Keys


def test_a_key_is_stored_only_as_its_hash_with_a_prefix_to_find_it(source: Source):
    key, raw = api_key_create(source=source, name="lab host")

    stored = ApiKey.objects.values().get(pk=key.pk)
    assert raw not in json.dumps(stored, default=str)
    assert stored["key_hash"] == ApiKey.hash_key(raw) and raw[3:].startswith(stored["prefix"])


def test_a_key_works_until_it_expires(source: Source):
    key, raw = api_key_create(source=source, expires_at=timezone.now() + timedelta(hours=1))
    assert ingest(raw) == 201

    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")
    response = client.get("/api/v1/conversations/")
    assert response.status_code == 401
    assert "expired" in response.json()["errors"][0]["message"]
    assert ingest(raw, "k-2") == 401
    assert Conversation.objects.count() == 1


def test_a_revoked_key_stops_at_once_and_the_source_keeps_its_other_keys(source: Source):
    first, first_raw = api_key_create(source=source)
    _, second_raw = api_key_create(source=source)

    api_key_revoke(key=first)

    assert ingest(first_raw) == 401
    assert ingest(second_raw) == 201


def test_using_a_key_records_when_it_was_last_used(source: Source):
    key, raw = api_key_create(source=source)
    assert key.last_used_at is None

    ingest(raw)

    key.refresh_from_db()
    assert key.last_used_at is not None and timezone.now() - key.last_used_at < timedelta(minutes=1)


def test_a_personal_token_can_be_made_to_expire(reviewer: User, capsys: pytest.CaptureFixture[str]):
    call_command("create_api_token", reviewer.username, "--expires-in-days", "7")

    raw = capsys.readouterr().out.strip()
    key = ApiKey.objects.get(key_hash=ApiKey.hash_key(raw))
    assert key.user == reviewer
    assert key.expires_at is not None
    assert timedelta(days=6, hours=23) < key.expires_at - timezone.now() <= timedelta(days=7)


def test_a_source_key_with_an_expiry_is_made_from_the_admin(admin_user: User, source: Source):
    client = Client()
    client.force_login(admin_user)

    response = client.post(
        f"/admin/chats/source/{source.pk}/create-key/", {"name": "ci runner", "expires_in_days": "30"}
    )

    assert response.status_code == 200
    key = ApiKey.objects.get(source=source)
    assert key.expires_at is not None and timedelta(days=29) < key.expires_at - timezone.now() <= timedelta(days=30)
    assert key.name == "ci runner"


# ---- Ingest throttle


def test_ingest_is_throttled_per_key_with_retry_after(source: Source, other_source: Source, settings):
    settings.MASTERBRAIN_THROTTLE_INGEST = "3/min"
    _, raw = api_key_create(source=source)
    _, other_raw = api_key_create(source=other_source)

    statuses = [ingest(raw, f"t-{n}") for n in range(3)]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")
    refused = client.post("/api/v1/ingest/", data=json.dumps(DOCUMENT), content_type="application/json")

    assert statuses == [201, 201, 201]
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert refused.json()["errors"][0]["message"].startswith("Request was throttled")
    # Another source's key has its own count, and the refused request stored nothing.
    assert ingest(other_raw, "t-other") == 201
    assert Conversation.objects.filter(source=source).count() == 3


# ---- The shared cache


@pytest.fixture
def redis_cache(settings):
    """The cache as production configures it with REDIS_URL: Redis on this machine, under a prefix of this test."""
    import uuid

    from django.core.cache import cache

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/0",
            "KEY_PREFIX": f"masterbrain-test-{uuid.uuid4().hex}",
        }
    }
    yield cache
    cache.clear()


def test_throttle_counts_live_in_redis_and_are_shared_by_every_worker(source: Source, settings, redis_cache):
    import redis

    settings.MASTERBRAIN_THROTTLE_INGEST = "2/min"
    _, raw = api_key_create(source=source)

    assert [ingest(raw, "r-1"), ingest(raw, "r-2")] == [201, 201]
    # Another process (a second worker) sees the same count: it is in Redis, not in this process's memory.
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    # A synchronous client: keys() returns the list (the stubs also allow the asyncio client's awaitable).
    keys = cast(list[bytes], redis.Redis.from_url("redis://127.0.0.1:6379/0").keys(f"{prefix}:*throttle_ingest*"))
    assert len(keys) == 1
    assert ingest(raw, "r-3") == 429


def test_the_ingest_throttle_ignores_x_forwarded_for_from_an_untrusted_peer() -> None:
    from django.test import RequestFactory
    from rest_framework.request import Request

    from chats.throttling import IngestRateThrottle

    raw = RequestFactory().post("/api/v1/ingest/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert IngestRateThrottle().get_ident(Request(raw)) == "203.0.113.9"
