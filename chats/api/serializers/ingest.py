"""The documented shapes of the ingestion results (one document, a bulk batch, a queued batch) and of a receipt."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chats.api.serializers.common import IssueSerializer
from chats.models import IngestionReceipt, Outcome


class IngestResultSerializer(serializers.Serializer[Any]):
    conversation = serializers.UUIDField(allow_null=True)
    external_id = serializers.CharField()
    outcome = serializers.ChoiceField(choices=Outcome.choices)
    format = serializers.CharField()
    receipt = serializers.UUIDField()
    warnings = IssueSerializer(many=True)
    errors = IssueSerializer(many=True, required=False)  # type: ignore[assignment]


class BulkItemSerializer(IngestResultSerializer):
    index = serializers.IntegerField()
    # An NDJSON line that is not JSON is rejected before it is a document: no id and no format (its receipt keeps
    # the line).
    external_id = serializers.CharField(allow_null=True)
    format = serializers.CharField(required=False)


class BulkResultSerializer(serializers.Serializer[Any]):
    results = BulkItemSerializer(many=True)
    summary = serializers.DictField(child=serializers.IntegerField())


class BulkQueuedItemSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    conversation = serializers.UUIDField(allow_null=True, help_text="null until a worker has stored the document.")
    external_id = serializers.CharField(allow_null=True, help_text="null until a worker has parsed the document.")
    outcome = serializers.CharField(
        help_text="queued: stored, for a worker to apply; rejected: a line of NDJSON that is not JSON."
    )
    receipt = serializers.UUIDField()
    receipt_url = serializers.CharField(
        required=False, help_text="GET it for the outcome once a worker has applied the document."
    )
    warnings = IssueSerializer(many=True)
    errors = IssueSerializer(many=True, required=False)  # type: ignore[assignment]


class BulkQueuedSerializer(serializers.Serializer[Any]):
    results = BulkQueuedItemSerializer(many=True)
    summary = serializers.DictField(child=serializers.IntegerField())


class ReceiptSerializer(serializers.ModelSerializer[Any]):
    conversation: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="uuid",
        read_only=True,
        allow_null=True,
        help_text="The conversation stored; null while queued, for a rejected document, and once it is deleted.",
    )
    format = serializers.CharField(source="input_format")
    payload = serializers.SerializerMethodField(
        help_text="The document as sent, when the body was JSON; null when it was not, and once the payload is pruned."
    )
    payload_text = serializers.SerializerMethodField(
        help_text="The body as text when it was not JSON, bytes that are not UTF-8 (and NUL) as \\xNN escapes; null "
        "otherwise. The exact bytes: GET /api/v1/receipts/{uuid}/payload/."
    )
    payload_pruned = serializers.BooleanField(
        read_only=True, help_text="Retention removed the payload; the hash and size stay."
    )

    class Meta:
        model = IngestionReceipt
        fields = [
            "uuid",
            "conversation",
            "external_id",
            "format",
            "outcome",
            "payload_sha256",
            "size_bytes",
            "messages_added",
            "warnings",
            "errors",
            "created_at",
            "payload",
            "payload_text",
            "payload_pruned",
        ]

    @extend_schema_field({"description": "Any JSON value.", "nullable": True})
    def get_payload(self, receipt: IngestionReceipt) -> Any:
        shown = receipt.payload.shown if receipt.payload is not None else None
        return shown.document if shown is not None and shown.is_json else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_payload_text(self, receipt: IngestionReceipt) -> str | None:
        shown = receipt.payload.shown if receipt.payload is not None else None
        return shown.text if shown is not None and not shown.is_json else None
