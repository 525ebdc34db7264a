"""The audit log's filters (``AuditEventFilter``)."""

from __future__ import annotations

import datetime as dt

import django_filters
from django.db.models import Q, QuerySet

from chats.filters.fields import DayFilter, on_or_after, on_or_before
from chats.models import AuditEvent, Conversation


class AuditEventFilter(django_filters.FilterSet):
    """The audit log's filters (the audit pages and their export), in the URL as on the conversation list:
    actor, action, target_type, conversation, source, date_from, date_to.

    - ``actor``: who acted, as the log names them: a person's username, a source writing by its key
      (``source:masterbrain``) or a command; a command may be named without the account that ran it
      (``command:import_conversations`` matches ``command:import_conversations (deploy)``).
    - ``source``: the events about that source's conversations (``conversation_uuid`` is one of them): its keys'
      ingestions, and the feedback, review status, branch and export events of those conversations. Events about
      the source's own row or its keys (``source.*``, ``api_key.*``) carry no conversation: filter them by
      ``target_type``.
    - ``date_from``/``date_to``: UTC calendar days, both inclusive.

    Every filter keeps the newest-first order by id on an index (chats.models.records: ``audit_*_id_idx``).
    """

    actor = django_filters.CharFilter(method="filter_actor", label="Actor (username, source:name or command:name)")
    action = django_filters.CharFilter(field_name="action", label="Action")
    target_type = django_filters.CharFilter(field_name="target_type", label="Target type")
    conversation = django_filters.UUIDFilter(field_name="conversation_uuid", label="Conversation uuid")
    source = django_filters.CharFilter(method="filter_source", label="Source (its conversations)")
    date_from = DayFilter(method="filter_date_from", label="From")
    date_to = DayFilter(method="filter_date_to", label="To")

    class Meta:
        model = AuditEvent
        fields: list[str] = []

    def filter_actor(self, queryset: QuerySet[AuditEvent], name: str, value: str) -> QuerySet[AuditEvent]:
        value = value.strip()
        if not value:
            return queryset
        if value.startswith("command:") and " (" not in value:
            # Only for commands: an OR of two index conditions cannot keep the index's order, so the people and
            # sources (most of the log) are matched by equality alone.
            return queryset.filter(Q(actor_username=value) | Q(actor_username__startswith=f"{value} ("))
        return queryset.filter(actor_username=value)

    def filter_source(self, queryset: QuerySet[AuditEvent], name: str, value: str) -> QuerySet[AuditEvent]:
        conversations = Conversation.objects.filter(source__name=value.strip()).values("uuid")
        return queryset.filter(conversation_uuid__in=conversations)

    def filter_date_from(self, queryset: QuerySet[AuditEvent], name: str, value: dt.date) -> QuerySet[AuditEvent]:
        return queryset.filter(on_or_after("created_at", value))

    def filter_date_to(self, queryset: QuerySet[AuditEvent], name: str, value: dt.date) -> QuerySet[AuditEvent]:
        return queryset.filter(on_or_before("created_at", value))

    def given_filters(self) -> dict[str, str]:
        """The non-empty filters as the request spelled them, for links that keep them and for the audit trail."""
        given = {name: self.data.get(name) for name in self.filters}
        return {name: str(value) for name, value in given.items() if value not in (None, "")}
