"""`Authorization: Api-Key <key>`: a source's key (ingest and read its own data) or a person's token."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from chats.models import ApiKey, Source


class SourcePrincipal:
    """Who a request is when it carries a source's key: the source, not a person."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, source: Source):
        self.source = source

    def __str__(self) -> str:
        return f"source:{self.source.name}"

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return False

    def get_username(self) -> str:
        return str(self)


def usable_key(raw_key: str) -> ApiKey | None:
    """The key whose hash this is, if it is neither revoked nor expired and its source (if any) is active."""
    key = ApiKey.objects.usable().select_related("source", "user").filter(key_hash=ApiKey.hash_key(raw_key)).first()
    if key is None or (key.source is not None and not key.source.is_active):
        return None
    return key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Api-Key"

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, raw_key = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        raw_key = raw_key.strip()
        if not raw_key:
            raise exceptions.AuthenticationFailed("The Api-Key header carries no key.")
        key = usable_key(raw_key)
        if key is None:
            raise exceptions.AuthenticationFailed("This API key is unknown, revoked or expired.")
        # Touch last_used_at at most once a minute, so authentication stays a read on the hot path.
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        if key.source is not None:
            return SourcePrincipal(key.source), key
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
