"""The audit log, read-only: only the services write it. The list says when its hash chain was last verified."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from chats.admin.base import ReadOnlyAdmin
from chats.models import AuditEvent
from chats.selectors.audit import audit_chain_last_verification


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an event here. An event's page shows its
    place in the hash chain (the hash before it and its own), read-only like every field."""

    list_display = ["created_at", "actor_username", "action", "target_type", "target_id", "conversation_uuid"]
    list_select_related = ["actor"]
    list_filter = ["actor", "action", "created_at"]
    search_fields = ["actor_username", "target_id"]
    raw_id_fields = ["actor"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return super().get_queryset(request).select_related("actor")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        context = {**(extra_context or {}), "chain_verification": audit_chain_last_verification()}
        return super().changelist_view(request, extra_context=context)
