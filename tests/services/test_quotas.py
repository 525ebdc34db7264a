"""The daily byte count of API keys (chats/services/quotas.py): one statement adds and checks, per key and per day.
Through the ingest endpoints, with their 429 and 413, in tests/api/test_ingest_quota.py."""

from __future__ import annotations

from datetime import date

import pytest

from chats.models import ApiKeyDailyUsage, Source
from chats.services.quotas import api_key_daily_bytes_add
from chats.services.sources import api_key_create

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 14)


def counted(key_id: int, day: date = DAY) -> int | None:
    return ApiKeyDailyUsage.objects.filter(api_key_id=key_id, day=day).values_list("bytes_received", flat=True).first()


def test_bytes_add_up_per_key_and_day_until_the_quota_and_what_does_not_fit_adds_nothing(source: Source) -> None:
    key, _ = api_key_create(source=source, name="quota")
    other, _ = api_key_create(source=source, name="other")

    assert api_key_daily_bytes_add(key=key, day=DAY, size=600, quota=1000) == 600
    assert api_key_daily_bytes_add(key=key, day=DAY, size=400, quota=1000) == 1000  # exactly the quota fits
    assert api_key_daily_bytes_add(key=key, day=DAY, size=1, quota=1000) is None
    assert counted(key.pk) == 1000
    # Another key, or the next day, counts from zero.
    assert api_key_daily_bytes_add(key=other, day=DAY, size=700, quota=1000) == 700
    assert api_key_daily_bytes_add(key=key, day=date(2026, 3, 15), size=700, quota=1000) == 700
    assert counted(key.pk) == 1000


def test_without_a_quota_every_body_is_counted(source: Source) -> None:
    key, _ = api_key_create(source=source, name="unlimited")

    assert api_key_daily_bytes_add(key=key, day=DAY, size=5_000_000, quota=0) == 5_000_000
    assert api_key_daily_bytes_add(key=key, day=DAY, size=1, quota=0) == 5_000_001
    assert counted(key.pk) == 5_000_001
