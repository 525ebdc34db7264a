"""Throttles: ingest requests per API key and failed sign-ins, counted in the shared cache; ingest bytes per API
key per UTC day, counted in the database.

With Redis configured (REDIS_URL) every worker and host shares the cache's counts; with the local-memory cache each
worker process counts on its own, so the effective limit is multiplied by the number of workers. The daily byte
quota is exact either way (see `ingest_quota_charge`).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from chats.models import ApiKey, ApiKeyDailyUsage

# --------------------------------------------------------------------------------------------------------------
# Ingest


class IngestRateThrottle(SimpleRateThrottle):
    """MASTERBRAIN_THROTTLE_INGEST requests per API key; 429 with Retry-After beyond."""

    scope = "ingest"

    def get_rate(self) -> str | None:
        # Read at request time, so that a changed setting (or a test's override) applies without a restart.
        return str(settings.MASTERBRAIN_THROTTLE_INGEST)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        key = request.auth
        ident = f"key:{key.pk}" if isinstance(key, ApiKey) else f"address:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


# --------------------------------------------------------------------------------------------------------------
# Ingest: bytes per API key per UTC day (MASTERBRAIN_KEY_DAILY_BYTES)

# Counted in the database rather than the cache: the check and the count are one statement (an upsert whose
# update applies only while the sum fits), so the quota is exact however many servers and workers answer, with or
# without Redis, and it does not start again when the cache is flushed or evicts the counter. The statement runs
# outside the ingestion's transaction (the endpoints are not atomic), so a key's concurrent requests wait for
# each other only for its duration. A sum over the day's receipts would be exact too, but would read every
# receipt of the day on every request, and two requests could both pass it before either is stored.
_CHARGE = (
    "INSERT INTO {table} AS counted (api_key_id, day, bytes_received) VALUES (%s, %s, %s) "
    "ON CONFLICT (api_key_id, day) DO UPDATE SET bytes_received = counted.bytes_received + EXCLUDED.bytes_received"
    "{within_quota} RETURNING bytes_received"
)
_WITHIN_QUOTA = " WHERE counted.bytes_received + EXCLUDED.bytes_received <= %s"


class OverDailyQuota(exceptions.APIException):
    """A body larger than a key may send in a whole day."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


def utc_today() -> date:
    return timezone.now().astimezone(UTC).date()


def seconds_to_next_utc_day() -> int:
    now = timezone.now().astimezone(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return max(1, math.ceil((midnight - now).total_seconds()))


def ingest_quota_charge(key: ApiKey | None, size: int) -> None:
    """Count a body of `size` bytes against its key's quota for the UTC day, before anything decodes it; refuse
    it, counting nothing, when it does not fit: 429 with Retry-After (until 00:00 UTC), or 413 for a body larger
    than the whole quota. With no quota (0) the bytes are still counted, for the admin's key page."""
    if key is None:
        return
    quota = settings.MASTERBRAIN_KEY_DAILY_BYTES
    if quota and size > quota:
        raise OverDailyQuota(
            f"the body is {size} bytes: this key may send at most {quota} bytes a day (MASTERBRAIN_KEY_DAILY_BYTES)"
        )
    today = utc_today()
    table = connection.ops.quote_name(ApiKeyDailyUsage._meta.db_table)
    params: list[Any] = [key.pk, today, size]
    if quota:
        params.append(quota)
    with connection.cursor() as cursor:
        cursor.execute(_CHARGE.format(table=table, within_quota=_WITHIN_QUOTA if quota else ""), params)
        counted = cursor.fetchone()
    if counted is None:
        used = key_usage_on(key, today)
        raise exceptions.Throttled(
            wait=seconds_to_next_utc_day(),
            detail=(
                f"this key has sent {used} of its {quota} bytes for today (UTC, MASTERBRAIN_KEY_DAILY_BYTES): a body "
                f"of {size} bytes does not fit. The quota starts again at 00:00 UTC."
            ),
        )


def key_usage_on(key: ApiKey, day: date) -> int:
    """The bytes `key` sent on `day` (UTC)."""
    usage = ApiKeyDailyUsage.objects.filter(api_key=key, day=day).values_list("bytes_received", flat=True).first()
    return usage or 0


# --------------------------------------------------------------------------------------------------------------
# Sign-in


def client_address(request: HttpRequest) -> str:
    """The peer's address. Behind a reverse proxy this is the proxy's, unless it rewrites REMOTE_ADDR."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _keys(username: str, address: str) -> tuple[str, str]:
    # Hashed: a user name is arbitrary text, and cache keys must be short and plain.
    name = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return f"signin-failures:user:{name}", f"signin-failures:address:{address}"


def sign_in_blocked(username: str, address: str) -> bool:
    """True when this user name or this address has used up its failed attempts in the current window."""
    user_key, address_key = _keys(username, address)
    counts: dict[str, int] = cache.get_many([user_key, address_key])
    return bool(
        counts.get(user_key, 0) >= settings.MASTERBRAIN_LOGIN_FAILURES_PER_USER
        or counts.get(address_key, 0) >= settings.MASTERBRAIN_LOGIN_FAILURES_PER_ADDRESS
    )


def sign_in_failed(username: str, address: str) -> None:
    """Count a failed attempt. The window starts at the first failure and is not extended by later ones."""
    for key in _keys(username, address):
        if not cache.add(key, 1, timeout=settings.MASTERBRAIN_LOGIN_WINDOW_SECONDS):
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, timeout=settings.MASTERBRAIN_LOGIN_WINDOW_SECONDS)


def sign_in_succeeded(username: str) -> None:
    """A correct password clears the user name's count (not the address's: one account may be guessed from it)."""
    user_key, _ = _keys(username, "")
    cache.delete(user_key)
