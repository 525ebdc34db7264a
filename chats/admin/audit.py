"""The audit log, read-only: only the services write it."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from chats.admin.base import ReadOnlyAdmin
from chats.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an event here."""

    list_display = ["created_at", "actor_username", "action", "target_type", "target_id", "conversation_uuid"]
    list_select_related = ["actor"]
    list_filter = ["actor", "action", "created_at"]
    search_fields = ["actor_username", "target_id"]
    raw_id_fields = ["actor"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return super().get_queryset(request).select_related("actor")
