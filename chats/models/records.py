"""What happened, kept for the record: a receipt for every ingestion attempt (with the payload received) and the
append-only audit log of reviewer and admin actions."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from chats.models.checks import choices_check
from chats.models.conversations import Conversation
from chats.models.sources import ApiKey, Source


class Outcome(models.TextChoices):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    REJECTED = "rejected"


class IngestionReceipt(models.Model):
    """Every ingestion attempt: what came in (the payload itself, so nothing is lost) and what came out."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="receipts")
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="receipts"
    )
    external_id = models.TextField(blank=True)
    input_format = models.CharField(max_length=20, blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    payload = models.JSONField(null=True, blank=True)
    payload_text = models.TextField(blank=True)  # the body when it was not JSON
    payload_sha256 = models.CharField(max_length=64)
    size_bytes = models.PositiveIntegerField(default=0)
    messages_added = models.PositiveIntegerField(default=0)
    warnings = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [choices_check("receipt_outcome_valid", "outcome", Outcome)]
        indexes = [
            # The admin's receipt list, newest first, per source.
            models.Index(fields=["source", "-created_at"], name="receipt_source_created_idx"),
            # "Has this exact payload come before?"
            models.Index(fields=["payload_sha256"], name="receipt_sha_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} {self.external_id or self.uuid}"


class AuditEvent(models.Model):
    """Append-only record of reviewer and admin actions. Only the services write it."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64)  # "feedback.updated", "conversation.status_changed", ...
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=255)
    conversation_uuid = models.UUIDField(null=True, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The audit log newest first, and the dashboard's recent activity.
            models.Index(fields=["-created_at"], name="audit_created_idx"),
            # "What did this person do?"
            models.Index(fields=["actor", "-created_at"], name="audit_actor_idx"),
            # The history of one conversation.
            models.Index(fields=["conversation_uuid", "-created_at"], name="audit_conversation_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_username or 'system'} {self.action} {self.target_type}:{self.target_id}"
