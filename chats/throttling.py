"""Throttles, counted in the shared cache: ingest requests per API key, and failed sign-ins.

With Redis configured (REDIS_URL) every worker and host shares the counts; with the local-memory cache each
worker process counts on its own, so the effective limit is multiplied by the number of workers.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from chats.models import ApiKey

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
