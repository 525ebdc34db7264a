"""The model calls an instrumented application reported (OpenTelemetry spans, ``chats.ingest.otel``): one row per
call, beside the conversation its messages were placed in, with what the span says of the call itself.

The call's messages are ordinary messages of the conversation; this row keeps what no message holds: the trace and
span ids (provenance, and a link to the team's tracing UI), the span's times and latency, the token usage, the
finish reasons, the provider and the request settings. ``message`` is the call's last output message.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from chats.models.conversations import Conversation, Message


class ModelCall(models.Model):
    # No index of its own: the unique (conversation, trace, span) index starts with it.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="model_calls", db_index=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, null=True, blank=True, related_name="model_calls")
    form = models.CharField(max_length=20)  # "genai", "openinference" or "openllmetry"
    trace_id = models.CharField(max_length=64, blank=True)  # lowercase hex, as OTLP/JSON writes it
    span_id = models.CharField(max_length=64, blank=True)
    parent_span_id = models.CharField(max_length=64, blank=True)
    name = models.TextField(blank=True)  # the span's name ("chat gpt-4o")
    operation = models.TextField(blank=True)
    provider = models.TextField(blank=True)
    request_model = models.TextField(blank=True)
    response_model = models.TextField(blank=True)
    response_id = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.BigIntegerField(null=True, blank=True)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    finish_reasons = models.JSONField(default=list, blank=True)
    settings = models.JSONField(default=dict, blank=True)  # the request's settings (temperature, top_p, ...)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            # A resent span is the same call: stored once (the writer inserts ON CONFLICT DO NOTHING).
            models.UniqueConstraint(
                fields=["conversation", "trace_id", "span_id"],
                condition=~Q(span_id=""),
                name="modelcall_unique_conversation_span",
            ),
        ]
        indexes = [
            # The thread page: WHERE conversation_id = ? ORDER BY started_at.
            models.Index(fields=["conversation", "started_at"], name="modelcall_conversation_idx"),
            # ?provider=: EXISTS (... WHERE provider = ? AND conversation_id = conversations.id).
            models.Index(fields=["provider", "conversation"], name="modelcall_provider_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name or self.operation} {self.span_id}"

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)
