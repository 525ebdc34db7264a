"""Exports are recorded: who took which conversations out, in which format, with which filters."""

from __future__ import annotations

from typing import Any

from chats.audit_actions import AuditAction
from chats.services.audit import Actor, audit_record


def export_record(
    *,
    actor: Actor,
    what: str,
    format: str,
    filters: dict[str, Any],
    count: int | None = None,
    conversation_uuid: Any = None,
) -> None:
    audit_record(
        actor=actor,
        action=AuditAction.CONVERSATION_EXPORTED,
        target_type=what,
        target_id=str(conversation_uuid or "filtered"),
        conversation_uuid=conversation_uuid,
        after={"format": format, "filters": filters, "count": count},
    )
