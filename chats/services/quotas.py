"""The daily byte quota of API keys: the count of what each key sent per UTC day (``ApiKeyDailyUsage``).

Counted in the database rather than the cache: the check and the count are one statement (an upsert whose update
applies only while the sum fits), so the quota is exact however many servers and workers answer, with or without
Redis, and it does not start again when the cache is flushed or evicts the counter. The statement runs outside the
ingestion's transaction (the endpoints are not atomic), so a key's concurrent requests wait for each other only for
its duration. A sum over the day's receipts would be exact too, but would read every receipt of the day on every
request, and two requests could both pass it before either is stored. The throttle that refuses what does not fit
is `chats.throttling.ingest_quota_charge`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import connection

from chats.models import ApiKey, ApiKeyDailyUsage

_CHARGE = (
    "INSERT INTO {table} AS counted (api_key_id, day, bytes_received) VALUES (%s, %s, %s) "
    "ON CONFLICT (api_key_id, day) DO UPDATE SET bytes_received = counted.bytes_received + EXCLUDED.bytes_received"
    "{within_quota} RETURNING bytes_received"
)
_WITHIN_QUOTA = " WHERE counted.bytes_received + EXCLUDED.bytes_received <= %s"


def api_key_daily_bytes_add(*, key: ApiKey, day: date, size: int, quota: int) -> int | None:
    """Add `size` bytes to what `key` sent on `day`, unless the sum would pass `quota` (0: no quota, always added).
    The day's new sum, or None when it does not fit (nothing added)."""
    table = connection.ops.quote_name(ApiKeyDailyUsage._meta.db_table)
    params: list[Any] = [key.pk, day, size]
    if quota:
        params.append(quota)
    with connection.cursor() as cursor:
        cursor.execute(_CHARGE.format(table=table, within_quota=_WITHIN_QUOTA if quota else ""), params)
        counted = cursor.fetchone()
    return None if counted is None else int(counted[0])
