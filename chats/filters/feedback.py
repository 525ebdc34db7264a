"""The API's feedback filters (``FeedbackFilter``)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from chats.filters.fields import StorableFilterForm, StrictBooleanFilter
from chats.models import Feedback, FeedbackOrigin


class FeedbackFilter(django_filters.FilterSet):
    conversation = django_filters.UUIDFilter(field_name="conversation__uuid", label="Conversation uuid")
    message = django_filters.CharFilter(field_name="message__key", label="Message key")
    origin = django_filters.ChoiceFilter(choices=FeedbackOrigin.choices, label="Origin")
    author = django_filters.CharFilter(field_name="author__username", label="Author's username")
    mine = StrictBooleanFilter(method="filter_mine", label="Only the caller's own feedback")

    class Meta:
        model = Feedback
        fields: list[str] = []
        form = StorableFilterForm

    def filter_mine(self, queryset: QuerySet[Feedback], name: str, value: bool | None) -> QuerySet[Feedback]:
        if value is None:
            return queryset
        user = getattr(self.request, "user", None)
        pk = getattr(user, "pk", None)
        if value:
            return queryset.filter(author_id=pk) if pk is not None else queryset.none()
        return queryset.exclude(author_id=pk) if pk is not None else queryset
