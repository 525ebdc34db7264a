"""The audit log, read-only: only the services write it. The list says when its hash chain was last verified; the
list and an event's page link the actor and the target, and an event's page shows its before and after as a
field-by-field diff (chats.diffs, as the audit section of the application does). The chain's checkpoints, which
only verify_audit writes, are read-only too."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from chats.admin.base import ReadOnlyAdmin
from chats.diffs import field_changes
from chats.integers import parse_int
from chats.models import AuditCheckpoint, AuditEvent, ReadEvent
from chats.selectors.audit import audit_chain_last_verification

# The admin pages of the targets named by their primary key.
_CHANGE_VIEWS = {
    "api_key": "admin:chats_apikey_change",
    "source": "admin:chats_source_change",
    "label": "admin:chats_label_change",
    "user": "admin:auth_user_change",
}
# The admin lists that find a target named by its uuid (a filter on the model's own field).
_UUID_LISTS = {
    "conversation": "admin:chats_conversation_changelist",
    "feedback": "admin:chats_feedback_changelist",
    "receipt": "admin:chats_ingestionreceipt_changelist",
}


def _uuid(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _link(url: str, text: str) -> SafeString:
    return format_html('<a href="{}">{}</a>', url, text)


def actor_url(event: AuditEvent) -> str | None:
    """A person's admin page, or a key's source (found by name in the sources' list): no query."""
    if event.actor_id is not None:
        return reverse("admin:auth_user_change", args=[event.actor_id])
    if event.actor_username.startswith("source:"):
        name = event.actor_username.removeprefix("source:")
        return reverse("admin:chats_source_changelist") + "?" + urlencode({"name": name})
    return None


def target_url(event: AuditEvent) -> str | None:
    """The target's admin page, by its key or, for those named by a uuid, through its list: no query."""
    kind, pk = event.target_type, event.target_id
    if kind in _CHANGE_VIEWS and (key := parse_int(pk, minimum=1)) is not None:
        return reverse(_CHANGE_VIEWS[kind], args=[key])
    if kind in _UUID_LISTS and (value := _uuid(pk)) is not None:
        return reverse(_UUID_LISTS[kind]) + "?" + urlencode({"uuid": str(value)})
    return None


def receipt_url(event: AuditEvent) -> str | None:
    """The receipt of the document that caused an ingestion event (its ``after["receipt"]``)."""
    value = event.after.get("receipt") if isinstance(event.after, dict) else None
    receipt = _uuid(value) if value else None
    if receipt is None:
        return None
    return reverse(_UUID_LISTS["receipt"]) + "?" + urlencode({"uuid": str(receipt)})


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an event here. An event's page shows its
    place in the hash chain (the hash before it and its own), read-only like every field, and what changed."""

    list_display = ["created_at", "actor_link", "action", "target_link", "conversation_uuid"]
    list_select_related = ["actor"]
    list_filter = ["actor", "action", "created_at"]
    search_fields = ["actor_username", "target_id"]
    raw_id_fields = ["actor"]
    fields = [
        "created_at",
        "actor_link",
        "action",
        "target_link",
        "conversation_link",
        "receipt_link",
        "changes",
        "before",
        "after",
        "actor",
        "actor_username",
        "target_type",
        "target_id",
        "conversation_uuid",
        "prev_hash",
        "event_hash",
    ]
    readonly_fields = ["actor_link", "target_link", "conversation_link", "receipt_link", "changes"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return super().get_queryset(request).select_related("actor")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, object] | None = None) -> HttpResponse:
        context = {**(extra_context or {}), "chain_verification": audit_chain_last_verification()}
        return super().changelist_view(request, extra_context=context)

    @admin.display(description="actor", ordering="actor_username")
    def actor_link(self, event: AuditEvent) -> str:
        name = event.actor_username or "system"
        url = actor_url(event)
        return _link(url, name) if url else name

    @admin.display(description="target")
    def target_link(self, event: AuditEvent) -> str:
        text = f"{event.target_type} {event.target_id}"
        url = target_url(event)
        return _link(url, text) if url else text

    @admin.display(description="conversation")
    def conversation_link(self, event: AuditEvent) -> str:
        if event.conversation_uuid is None:
            return "-"
        thread = reverse("chats:thread", args=[event.conversation_uuid])
        timeline = reverse("chats:audit_list") + "?" + urlencode({"conversation": str(event.conversation_uuid)})
        return format_html(
            '<a href="{}">{}</a> (<a href="{}">its audit events</a>)', thread, event.conversation_uuid, timeline
        )

    @admin.display(description="caused by receipt")
    def receipt_link(self, event: AuditEvent) -> str:
        url = receipt_url(event)
        return _link(url, str(event.after["receipt"])) if url and isinstance(event.after, dict) else "-"

    @admin.display(description="what changed")
    def changes(self, event: AuditEvent) -> str:
        return render_to_string(
            "admin/chats/auditevent/_diff.html",
            {"changes": field_changes(event.before, event.after)},
            using="django",
        )


@admin.register(ReadEvent)
class ReadEventAdmin(ReadOnlyAdmin):
    """Who opened which conversation (the read audit): read-only, pruned by ``prune_read_audit`` only."""

    list_display = ["created_at", "viewer_name", "via", "conversation_uuid"]
    list_filter = ["via", "created_at"]
    search_fields = ["viewer_name", "=conversation_uuid"]
    raw_id_fields = ["viewer"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReadEvent]:
        return super().get_queryset(request).select_related("viewer")


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ReadOnlyAdmin):
    """The heads of the audit chain that verify_audit found intact, as `<events>:<hash>` for `verify_audit
    --expect`: read-only, and append-only in the database."""

    list_display = ["created_at", "events", "last_event_id", "head", "recorded_by"]
    list_filter = ["created_at"]
    fields = ["created_at", "head", "events", "last_event_id", "head_hash", "recorded_by"]
    readonly_fields = ["head"]

    @admin.display(description="head (for verify_audit --expect)")
    def head(self, checkpoint: AuditCheckpoint) -> str:
        return str(checkpoint)
