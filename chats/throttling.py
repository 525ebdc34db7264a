"""Throttles: ingest requests per API key, ingest bytes per API key per UTC day, and failed sign-ins per user name
and client address.

Ingest requests are counted in the shared cache: with Redis configured (REDIS_URL) every worker and host shares the
counts; with the local-memory cache each worker process counts on its own, so the effective limit is multiplied by
the number of workers. The daily byte quota is counted in the database, exact either way (see
`ingest_quota_charge`, and chats/services/quotas.py, which writes the count).

Sign-in is django-axes', configured in the settings' Sign-in block; its attempts are rows in the database, shared
by every worker. Here are the hooks that make it this site's policy: who the client is (the address), which name
it tried (normalized), and what a locked-out sign-in answers.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import unicodedata
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta

from axes.helpers import get_cool_off, get_lockout_message
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from chats.models import ApiKey, ApiKeyDailyUsage
from chats.services.quotas import api_key_daily_bytes_add

# --------------------------------------------------------------------------------------------------------------
# Ingest


class IngestRateThrottle(SimpleRateThrottle):
    """MASTERBRAIN_THROTTLE_INGEST requests per API key; 429 with Retry-After beyond."""

    scope = "ingest"

    def get_rate(self) -> str | None:
        # Read at request time, so that a changed setting (or a test's override) applies without a restart.
        return str(settings.MASTERBRAIN_THROTTLE_INGEST)

    def get_ident(self, request: Request) -> str:
        # The address as sign-in reads it (X-Forwarded-For only from a trusted proxy), not DRF's, which believes
        # whatever X-Forwarded-For a client sends.
        return client_address(request) or "unknown"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        key = request.auth
        ident = f"key:{key.pk}" if isinstance(key, ApiKey) else f"address:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


# --------------------------------------------------------------------------------------------------------------
# Ingest: bytes per API key per UTC day (MASTERBRAIN_KEY_DAILY_BYTES)

# Counted in the database, exact however many servers and workers answer: see chats/services/quotas.py.


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
    if api_key_daily_bytes_add(key=key, day=today, size=size, quota=quota) is None:
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

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: object) -> IpAddress | None:
    """An address as a peer or a proxy writes it: bare, IPv4 with a port, or [IPv6] with or without one."""
    if not isinstance(text, str):
        return None
    value = text.strip()
    if value.startswith("["):
        value = value[1 : value.find("]")] if "]" in value else ""
    elif value.count(":") == 1:  # IPv4 with a port (an IPv6 address has at least two colons)
        value = value.partition(":")[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@functools.cache
def _networks(entries: tuple[str, ...]) -> tuple[IpNetwork, ...]:
    return tuple(ipaddress.ip_network(entry) for entry in entries)


def _trusted(address: IpAddress) -> bool:
    return any(address in network for network in _networks(tuple(settings.MASTERBRAIN_TRUSTED_PROXIES)))


def client_address(request: HttpRequest) -> str | None:
    """The address a sign-in comes from (django-axes' AXES_CLIENT_IP_CALLABLE).

    The connecting peer (REMOTE_ADDR), unless it is one of MASTERBRAIN_TRUSTED_PROXIES: then X-Forwarded-For is
    read from the right, each trusted proxy having appended the address it was connected from, and the first
    address that is not a trusted proxy is the client. What a client writes into the header itself stays on the
    left and is never reached; an entry that is not an address stops the walk at the last trusted hop. A peer
    that is not a trusted proxy cannot name another address, whatever headers it sends.
    """
    peer = _address(request.META.get("REMOTE_ADDR"))
    if peer is None:
        return None
    client = peer
    if _trusted(peer):
        for hop in reversed(str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")):
            address = _address(hop)
            if address is None:
                break
            client = address
            if not _trusted(address):
                break
    return str(client)


def normalize_username(name: str) -> str:
    """The name failed sign-ins are counted under: "ALICE " and "alice" are one (the sign-in form's own NFKC
    normalization included, so that look-alike spellings are one too)."""
    return unicodedata.normalize("NFKC", name).strip().lower()[:255]


def sign_in_username(request: HttpRequest, credentials: Mapping[str, object] | None = None) -> str | None:
    """The user name an attempt counts under (django-axes' AXES_USERNAME_CALLABLE): from the credentials the
    sign-in passed to authenticate(), else from the posted form."""
    raw = credentials.get("username") if credentials else request.POST.get("username")
    return normalize_username(raw) if isinstance(raw, str) else None


def sign_in_locked_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: object = None
) -> HttpResponse:
    """What a locked-out sign-in answers (django-axes' AXES_LOCKOUT_CALLABLE): the sign-in page as the view drew
    it, its form saying why (see chats/forms.py), with status 429 and Retry-After; plain text otherwise."""
    if isinstance(original_response, HttpResponse) and original_response.status_code == 200:
        response = original_response
    else:
        response = HttpResponse(get_lockout_message(), content_type="text/plain; charset=utf-8")
    response.status_code = 429
    cool_off = get_cool_off(request)
    if cool_off is not None:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
