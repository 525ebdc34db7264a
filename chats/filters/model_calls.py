"""The conversation list's filters by model call (OpenTelemetry ingestion, ``chats.models.ModelCall``): by provider,
and by token usage (input and output tokens summed over the conversation's calls). ``chats.filters.conversations``
declares them.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from chats.integers import BIGINT_MAX, parse_int
from chats.models import Conversation, ModelCall


class TokenCountField(forms.CharField):
    """A number of tokens: ASCII digits, 0 or more (``chats.integers``)."""

    def to_python(self, value: object) -> Any:
        text = super().to_python(value)
        if text is None or text in self.empty_values:
            return None
        number = parse_int(text, minimum=0, maximum=BIGINT_MAX)
        if number is None:
            raise forms.ValidationError("A number of tokens: a whole number, 0 or more.", code="invalid")
        return number


class TokenCountFilter(django_filters.Filter):
    field_class = TokenCountField


def filter_provider(queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
    """Conversations with a model call to this provider (gen_ai.provider.name, llm.provider)."""
    return queryset.filter(Exists(ModelCall.objects.filter(conversation=OuterRef("pk"), provider=value)))


def _conversations_by_total(lookup: str, value: int) -> Any:
    """The ids of the conversations whose calls' tokens, summed, satisfy ``total__<lookup>=value``."""
    totals = (
        ModelCall.objects.order_by()
        .values("conversation_id")
        .annotate(total=Sum(Coalesce("input_tokens", Value(0)) + Coalesce("output_tokens", Value(0))))
    )
    return totals.filter(**{f"total__{lookup}": value}).values("conversation_id")


def filter_tokens_min(queryset: QuerySet[Conversation], name: str, value: int | None) -> QuerySet[Conversation]:
    """Conversations whose model calls used at least this many tokens in all."""
    return queryset if value is None else queryset.filter(pk__in=_conversations_by_total("gte", value))


def filter_tokens_max(queryset: QuerySet[Conversation], name: str, value: int | None) -> QuerySet[Conversation]:
    """Conversations with model calls that used at most this many tokens in all."""
    return queryset if value is None else queryset.filter(pk__in=_conversations_by_total("lte", value))
