"""A queue's rules on the API: a rule, its runs, and the input of its create and update."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.urls import reverse
from rest_framework import serializers

FILTERS_HELP = (
    "The conversation list's filters, by query parameter name (`source`, `tool_name`, `has_tool_calls`, ...): "
    "each value a string, or a list of strings for a repeated parameter. Checked by the list's own filters."
)


class QueueRuleSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    queue = serializers.IntegerField(source="queue_id")
    name = serializers.CharField()
    filters = serializers.JSONField(help_text=FILTERS_HELP)
    sample_rate = serializers.DecimalField(max_digits=5, decimal_places=4, coerce_to_string=False)
    enabled = serializers.BooleanField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class QueueRuleRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    rule = serializers.IntegerField(source="rule_id")
    state = serializers.CharField(help_text="queued, running, done or failed.")
    added = serializers.IntegerField(
        allow_null=True, help_text="Conversations added (those already in the queue are not); null until done."
    )
    error = serializers.CharField(help_text="Why the run failed (empty otherwise).")
    requested_by = serializers.CharField(source="requested_by.username")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    def get_url(self, run: Any) -> str:
        return reverse("api:queue-rule-run-detail", args=[run.rule.queue_id, run.rule_id, run.pk])


class QueueRuleInputSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    filters = serializers.JSONField(help_text=FILTERS_HELP)
    sample_rate = serializers.DecimalField(
        max_digits=5,
        decimal_places=4,
        min_value=Decimal("0.0001"),
        max_value=Decimal(1),
        default=Decimal(1),
        help_text="The share of the matching conversations taken, above 0 and at most 1; each conversation is "
        "taken or not by a stable hash of the rule and the conversation.",
    )
    enabled = serializers.BooleanField(default=True)


class QueueRulePatchSerializer(QueueRuleInputSerializer):
    """Only what is given changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, partial=True, **kwargs)
