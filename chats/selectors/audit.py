"""The audit log's reads that the pages share: when its hash chain was last verified, and with what outcome."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chats.models import AUDIT_VERIFIED_ACTION, AuditEvent


@dataclass(frozen=True)
class ChainVerification:
    verified_at: datetime
    by: str
    ok: bool
    events_checked: int
    broken_id: int | None
    problem: str


def audit_chain_last_verification() -> ChainVerification | None:
    """The last run of verify_audit (one query, on a partial index), or None when it never ran."""
    event = (
        AuditEvent.objects.filter(action=AUDIT_VERIFIED_ACTION)
        .order_by("-id")
        .only("created_at", "actor_username", "after")
        .first()
    )
    if event is None:
        return None
    outcome = event.after or {}
    return ChainVerification(
        verified_at=event.created_at,
        by=event.actor_username,
        ok=bool(outcome.get("ok")),
        events_checked=int(outcome.get("events_checked") or 0),
        broken_id=outcome.get("broken_id"),
        problem=str(outcome.get("problem") or ""),
    )
