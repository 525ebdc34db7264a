"""Sign-in lockouts: a staff member unlocks a user name, audited.

django-axes records failed sign-ins (one row per user name, address and browser) and locks a user name from an
address once it has too many (see chats/throttling.py). Its own writes are records of signing in, like sessions;
lifting a lock before it ends is a person's decision, and goes through here.
"""

from __future__ import annotations

from axes.models import AccessAttempt

from chats.audit_actions import AuditAction
from chats.services.audit import Actor, audit_record, audited_write
from chats.throttling import normalize_username


@audited_write
def signin_unlock(*, username: str, ip_address: str | None, actor: Actor) -> int:
    """Forget the failed sign-ins of `username` (as sign-in counts it: "ALICE " is alice) from `ip_address` (None:
    the attempts recorded without an address), so that it may sign in from there again at once; other addresses
    keep theirs. Records "signin.unlocked" with the number of failures forgotten; nothing when there were none.
    The number of attempt rows removed (one per browser)."""
    name = normalize_username(username)
    attempts = AccessAttempt.objects.select_for_update().filter(username=name, ip_address=ip_address)
    counts = list(attempts.values_list("failures_since_start", flat=True))
    if not counts:
        return 0
    attempts.delete()
    audit_record(
        actor=actor,
        action=AuditAction.SIGNIN_UNLOCKED,
        target_type="signin",
        target_id=name,
        before={"ip_address": ip_address, "failures": sum(counts)},
        after={"ip_address": ip_address, "failures": 0},
    )
    return len(counts)
