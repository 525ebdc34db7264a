"""Output serializers (and the documented shapes of the ingestion results and errors)."""

from __future__ import annotations

from rest_framework import serializers

from chats.models import IngestionReceipt


class IssueSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="A JSON pointer into the document ('' for the whole document).")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    errors = IssueSerializer(many=True)  # type: ignore[assignment]  # a field named like Serializer.errors


class IngestResultSerializer(serializers.Serializer):
    conversation = serializers.UUIDField(allow_null=True)
    external_id = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["created", "updated", "unchanged", "rejected"])
    format = serializers.CharField()
    receipt = serializers.UUIDField()
    warnings = IssueSerializer(many=True)
    errors = IssueSerializer(many=True, required=False)  # type: ignore[assignment]


class BulkItemSerializer(IngestResultSerializer):
    index = serializers.IntegerField()


class BulkResultSerializer(serializers.Serializer):
    results = BulkItemSerializer(many=True)
    summary = serializers.DictField(child=serializers.IntegerField())


class ReceiptSerializer(serializers.ModelSerializer):
    conversation: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    format = serializers.CharField(source="input_format")

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
        ]
