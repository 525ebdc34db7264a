"""Who sends conversations and how they authenticate: sources and their API keys (also personal tokens)."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Source(models.Model):
    """A system that sends conversations (an assistant backend, a logger, a batch job)."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self) -> ApiKeyQuerySet:
        """Keys that authenticate now: not revoked and not past their expiry."""
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
        )


class ApiKey(models.Model):
    """A secret that authenticates a source (to ingest and read its own data) or a person (a personal token).

    Only a SHA-256 hash of the key is stored: keys are 256-bit random strings, so a slow password hash adds
    nothing, and a hash lookup keeps authentication to one indexed query.
    """

    PREFIX_LENGTH = 8

    source = models.ForeignKey(Source, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=PREFIX_LENGTH, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Optional: a key stops authenticating at this time, as if revoked.
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(
                condition=(Q(source__isnull=False, user__isnull=True) | Q(source__isnull=True, user__isnull=False)),
                name="apikey_belongs_to_source_xor_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'key'})"

    @staticmethod
    def hash_key(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @staticmethod
    def generate() -> str:
        return "mb_" + secrets.token_urlsafe(32)

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None
