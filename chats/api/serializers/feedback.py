"""Feedback on the API: what a feedback shows, its labels, and the input of its create and update."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chats.models import Feedback, FeedbackOrigin, Label


class FeedbackSerializer(serializers.Serializer[Any]):
    uuid = serializers.UUIDField()
    conversation = serializers.UUIDField(source="conversation.uuid")
    message = serializers.CharField(
        source="message.key", allow_null=True, help_text="The message's key, or null for the whole conversation."
    )
    origin = serializers.ChoiceField(choices=FeedbackOrigin.values)
    author = serializers.CharField(source="author.username", allow_null=True, help_text="Null for imported feedback.")
    score = serializers.IntegerField(allow_null=True, min_value=-1, max_value=1)
    labels = serializers.SerializerMethodField(help_text="Label names.")
    comment = serializers.CharField(allow_blank=True)
    correction = serializers.CharField(allow_blank=True, help_text="A corrected assistant answer.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_labels(self, feedback: Feedback) -> list[str]:
        return [label.name for label in feedback.labels.all()]


class LabelSerializer(serializers.ModelSerializer[Any]):
    class Meta:
        model = Label
        fields = ["name", "description"]
        read_only_fields = fields


class FeedbackCreateSerializer(serializers.Serializer[Any]):
    conversation = serializers.UUIDField(help_text="The conversation's uuid.")
    message = serializers.CharField(
        required=False, allow_null=True, default=None, help_text="A message key; omit or null for the conversation."
    )
    score = serializers.ChoiceField(choices=[-1, 0, 1], required=False, allow_null=True, default=None)
    labels = serializers.ListField(
        child=serializers.CharField(), required=False, default=list, help_text="Label names from /api/v1/labels/."
    )
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    correction = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="A corrected answer (assistant messages only)."
    )


class FeedbackUpdateSerializer(serializers.Serializer[Any]):
    score = serializers.ChoiceField(choices=[-1, 0, 1], required=False, allow_null=True)
    labels = serializers.ListField(child=serializers.CharField(), required=False)
    comment = serializers.CharField(required=False, allow_blank=True)
    correction = serializers.CharField(required=False, allow_blank=True)
