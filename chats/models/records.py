"""What happened, kept for the record: a receipt for every ingestion attempt (with the payload received, stored
once per distinct content), the bytes each API key sent per day, and the append-only audit log of reviewer and
admin actions."""

from __future__ import annotations

import hashlib
import uuid
import zlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q
from django.utils import timezone

from chats import strict_json
from chats.audit_actions import AuditAction
from chats.ingest import plans
from chats.models.checks import choices_check
from chats.models.conversations import Conversation
from chats.models.sources import ApiKey, Source

# What became of a document: the one list of outcomes is the ingest package's (`chats.ingest.plans.Outcome`), and
# the receipt's choices are made from it.
Outcome = plans.Outcome


class Sha256Field(models.CharField):  # type: ignore[type-arg]
    """A SHA-256 digest, given and read as its 64 hexadecimal digits, stored as its 32 bytes (bytea, BLOB): half
    the size in the table and in every index that holds it, and no second index for LIKE, which PostgreSQL gets
    for a character primary key."""

    description = "SHA-256 digest, stored as 32 bytes"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["max_length"] = 64
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        del kwargs["max_length"]
        return name, path, args, kwargs

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "bytea" if connection.vendor == "postgresql" else "blob"

    def get_db_prep_value(self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False) -> Any:
        value = super().get_db_prep_value(value, connection, prepared)
        if value is None:
            return None
        try:
            return bytes.fromhex(value)
        except ValueError:  # not a digest (a search for anything else): bytes no digest has
            return b""

    def from_db_value(
        self, value: bytes | memoryview | None, expression: object, connection: BaseDatabaseWrapper
    ) -> str | None:
        return None if value is None else bytes(value).hex()


@dataclass(frozen=True)
class ShownPayload:
    """A payload as a person reads it: the document when the bytes are JSON, else the bytes as text."""

    is_json: bool
    document: Any = None  # when is_json
    text: str = ""  # when not: the bytes as UTF-8, those that are not UTF-8 (and NUL) as \xNN escapes


class ReceiptPayload(models.Model):
    """The bytes of an ingestion attempt exactly as received, stored once however many receipts name them (a
    resent document adds a receipt, not a second copy). The key is the SHA-256 of those bytes.

    Compressed with zlib (the standard library) by the application rather than by PostgreSQL's TOAST with lz4:
    TOAST compresses a value only once its row passes about 2 KB, so small documents would be stored as sent; on
    the same JSON payloads zlib keeps 0.16 of their size in the table where lz4 keeps 0.26 and pglz 0.26
    (bench/receipts_growth.py measures all three); the CPU is spent on the application servers, which scale out,
    not on the one primary; fewer bytes travel to the database and into its WAL; and it works the same on SQLite.
    On PostgreSQL the column is stored EXTERNAL (migration 0008), so that TOAST does not try to compress it again.
    """

    # zlib's default. On the benchmark's JSON (bench/receipts_growth.py) it keeps 0.134 of the size at about
    # 50 MB/s; level 9 saves 1.5% more at 0.8 times the speed, level 1 keeps 10% more at 1.8 times it.
    COMPRESSION_LEVEL = 6

    sha256 = Sha256Field(primary_key=True, editable=False)  # of the bytes as received
    compressed = models.BinaryField(editable=False)  # zlib.compress of those bytes
    size_bytes = models.PositiveIntegerField(editable=False)  # before compression

    class Meta:
        verbose_name = "receipt payload"

    def __str__(self) -> str:
        return f"{self.sha256[:16]}… ({self.size_bytes} bytes)"

    @classmethod
    def of(cls, content: bytes) -> ReceiptPayload:
        """An unsaved payload of these bytes."""
        return cls(
            sha256=hashlib.sha256(content).hexdigest(),
            compressed=zlib.compress(content, cls.COMPRESSION_LEVEL),
            size_bytes=len(content),
        )

    @property
    def content(self) -> bytes:
        """The bytes as received, exactly."""
        return zlib.decompress(self.compressed)

    @cached_property
    def shown(self) -> ShownPayload:
        content = self.content
        try:
            return ShownPayload(is_json=True, document=strict_json.loads(content))
        except ValueError:  # not JSON (UnicodeDecodeError and the strict decoder's refusals are ValueErrors)
            text = content.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
            return ShownPayload(is_json=False, text=text)


class IngestionReceipt(models.Model):
    """Every ingestion attempt: what came in (its hash, size and, until retention removes it, the payload itself)
    and what came out."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # No index of its own: the (source, created_at) index starts with it.
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="receipts", db_index=False)
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="receipts"
    )
    external_id = models.TextField(blank=True)
    input_format = models.CharField(max_length=20, blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    # The bytes received; None once prune_receipt_payloads has removed them (the hash and size stay). A payload is
    # deleted only when no receipt names it any more, by the prune itself (the database refuses any other
    # deletion of a payload still named: the foreign key has no ON DELETE action).
    payload = models.ForeignKey(
        ReceiptPayload, on_delete=models.DO_NOTHING, null=True, blank=True, related_name="receipts", db_index=False
    )
    payload_sha256 = models.CharField(max_length=64)  # of the bytes received: the payload's key while it is kept
    size_bytes = models.PositiveIntegerField(default=0)
    messages_added = models.PositiveIntegerField(default=0)
    warnings = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(outcome__in=Outcome.values), name="receipt_outcome_valid")]
        indexes = [
            # The admin's receipt list, newest first, per source.
            models.Index(fields=["source", "-created_at"], name="receipt_source_created_idx"),
            # "Has this exact payload come before?"
            models.Index(fields=["payload_sha256"], name="receipt_sha_idx"),
            # "Does a receipt still name this payload?": the prune, and the foreign key's check when a payload is
            # deleted. Receipts whose payload was pruned leave the index.
            models.Index(fields=["payload"], condition=Q(payload__isnull=False), name="receipt_payload_idx"),
            # The prune: receipts older than the cutoff that still hold a payload, oldest first.
            models.Index(fields=["created_at"], condition=Q(payload__isnull=False), name="receipt_payload_age_idx"),
            # requeue_ingest: the receipts still waiting for a worker, oldest first (a handful at any time).
            models.Index(fields=["created_at"], condition=Q(outcome="queued"), name="receipt_queued_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} {self.external_id or self.uuid}"

    @property
    def payload_pruned(self) -> bool:
        return self.payload_id is None


class ApiKeyDailyUsage(models.Model):
    """The bytes an API key sent on one UTC day: what MASTERBRAIN_KEY_DAILY_BYTES is checked against
    (chats/throttling.py counts them, one statement per request)."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="daily_usage")
    day = models.DateField()  # UTC
    bytes_received = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "API key daily usage"
        verbose_name_plural = "API key daily usage"
        constraints = [
            # One counter per key and day; also the index of "how much has this key sent today?".
            models.UniqueConstraint(fields=["api_key", "day"], name="key_usage_key_day_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.day}: {self.bytes_received} bytes"


# The hash the first event of the chain follows.
AUDIT_GENESIS_HASH = "0" * 64
# The event verify_audit writes: the outcome of a walk along the chain, itself part of the chain.
AUDIT_VERIFIED_ACTION = AuditAction.AUDIT_VERIFIED
# What an event says, as stored: who did what to which target, in which conversation, the state before and after.
# The chain's hash covers them (with the id and the time), and the audit export lists them.
AUDIT_EVENT_CONTENT = ("actor_username", "action", "target_type", "target_id", "conversation_uuid", "before", "after")


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
    # The hash chain (chats.services.audit): each event's hash covers its own content and the hash of the event
    # before it (by id), so that changing or removing an event breaks the chain from there on (verify_audit).
    prev_hash = models.CharField(max_length=64, editable=False)
    event_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The audit log newest first, and the dashboard's recent activity.
            models.Index(fields=["-created_at"], name="audit_created_idx"),
            # "What did this person do?"
            models.Index(fields=["actor", "-created_at"], name="audit_actor_idx"),
            # The history of one conversation.
            models.Index(fields=["conversation_uuid", "-created_at"], name="audit_conversation_idx"),
            # The last verification of the chain, shown on the audit pages: a handful of rows.
            models.Index(fields=["-id"], condition=Q(action=AUDIT_VERIFIED_ACTION), name="audit_verified_idx"),
            # The audit pages (/audit/) read newest first by id (the chain's order, one sequence), a page at a
            # time by keyset (id < cursor): each filter has an index that yields its events already in that order.
            # ?actor=: a person's username, a source ("source:name") or a command ("command:name", a prefix):
            # the pattern operator class serves both the equality and the prefix.
            models.Index(
                fields=["actor_username", "-id"],
                opclasses=["varchar_pattern_ops", "int8_ops"],
                name="audit_actor_name_id_idx",
            ),
            # ?action=feedback.updated
            models.Index(fields=["action", "-id"], name="audit_action_id_idx"),
            # ?target_type=api_key
            models.Index(fields=["target_type", "-id"], name="audit_target_type_id_idx"),
            # ?conversation=<uuid>, and ?source= (the events of that source's conversations).
            models.Index(fields=["conversation_uuid", "-id"], name="audit_conversation_id_idx"),
        ]
        constraints = [
            # One chain, never a fork: no two events follow the same one (the first follows AUDIT_GENESIS_HASH).
            models.UniqueConstraint(fields=["prev_hash"], name="audit_chain_prev_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_username or 'system'} {self.action} {self.target_type}:{self.target_id}"


class AuditCheckpoint(models.Model):
    """A head of the audit chain that verify_audit found intact: the number of events from the start of the chain
    up to it, and that event's hash. The chain cannot rewrite it (a table apart; on PostgreSQL append-only and never
    truncated, migration 0024), so a later walk that ends before `events`, or whose event number `events` has
    another hash, finds the log cut short, emptied or rewritten (chats.services.audit)."""

    events = models.BigIntegerField()  # events from the start of the chain up to the head, that one included
    last_event_id = models.BigIntegerField()  # the head's id, as recorded (informative: the count and hash decide)
    head_hash = models.CharField(max_length=64)
    recorded_by = models.CharField(max_length=150)  # "command:verify_audit (deploy)"
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-id"]
        constraints = [models.CheckConstraint(condition=Q(events__gte=1), name="audit_checkpoint_events_positive")]
        indexes = [
            # verify_audit reads every checkpoint in chain order while it walks the chain, by events.
            models.Index(fields=["events", "id"], name="audit_checkpoint_events_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.events}:{self.head_hash}"


class ViewedVia(models.TextChoices):
    PAGE = "page"
    API = "api"


class ReadEvent(models.Model):
    """Someone opened a conversation: its page, or the API's detail (chats.services.reads).

    Not an audit event: views are many, and they are pruned after MASTERBRAIN_READ_AUDIT_RETENTION_DAYS
    (prune_read_audit), which the audit log's hash chain forbids; recording one takes no chain lock. Append-only by
    convention: only the recording service inserts, only the prune deletes. Like the audit log, a view names its
    conversation by uuid, not by a foreign key, so that the record outlives what it names.
    """

    conversation_uuid = models.UUIDField()
    viewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )  # indexed below, with the time
    # Who it was, kept when the user is deleted: the username, or "source:<name>" for a source's key.
    viewer_name = models.CharField(max_length=150)
    via = models.CharField(max_length=8, choices=ViewedVia.choices)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [choices_check("view_via_valid", "via", ViewedVia)]
        indexes = [
            # A conversation's activity: its latest views.
            models.Index(fields=["conversation_uuid", "-created_at"], name="view_conversation_idx"),
            # "What did this person read?", and deleting a user (which sets their views' viewer to NULL).
            models.Index(fields=["viewer", "-created_at"], name="view_viewer_idx"),
            # The prune: views older than the cutoff, oldest first.
            models.Index(fields=["created_at"], name="view_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.viewer_name} viewed {self.conversation_uuid} ({self.via})"
