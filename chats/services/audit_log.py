"""Reading the audit log out is itself recorded: who exported which events, in which format, with which filters."""

from __future__ import annotations

from chats.audit_actions import AuditAction
from chats.models import AuditEvent
from chats.services.audit import Actor, audit_record


def audit_log_export_record(*, actor: Actor, format: str, filters: dict[str, str]) -> int | None:
    """Record an export of the log about to begin, and return the id of the last event it covers: the last event
    stored before this one, so that the export is exactly the log as it was when it was asked for (None: empty)."""
    up_to = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    audit_record(
        actor=actor,
        action=AuditAction.AUDIT_EXPORTED,
        target_type="audit_log",
        target_id="filtered" if filters else "all",
        after={"format": format, "filters": filters, "up_to_id": up_to},
    )
    return up_to
