"""Who may do what: a person's roles are their groups (and the staff and superuser flags)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REVIEWERS = "Reviewers"
AUDITORS = "Auditors"
LEADS = "Leads"


@dataclass(frozen=True)
class Roles:
    can_read: bool
    can_write: bool
    can_audit: bool = False  # the audit section and a conversation's activity
    can_lead: bool = False  # review queues: create and edit them, assign items, adjudicate


NONE = Roles(can_read=False, can_write=False)


def person_roles(user: Any) -> Roles:
    """Reading: Reviewers, Auditors, Leads and staff. Writing (feedback, review status): Reviewers and superusers.
    Auditing (the audit log, who read what): Auditors, staff and superusers, not Reviewers.
    Leading review queues (creating and editing them, assigning items, adjudicating): Leads and superusers.
    One query, for the person's groups."""
    if user is None or not user.is_authenticated or not user.is_active:
        return NONE
    groups = set(user.groups.values_list("name", flat=True))
    return Roles(
        can_read=bool(user.is_staff or user.is_superuser or groups & {REVIEWERS, AUDITORS, LEADS}),
        can_write=bool(user.is_superuser or REVIEWERS in groups),
        can_audit=bool(user.is_staff or user.is_superuser or AUDITORS in groups),
        can_lead=bool(user.is_superuser or LEADS in groups),
    )


def request_roles(request: Any) -> Roles:
    """What the request's signed-in person may do: `person_roles`, worked out once per request (views, templates
    and their navigation ask it several times)."""
    cached = getattr(request, "_chats_roles", None)
    if isinstance(cached, Roles):
        return cached
    roles = person_roles(getattr(request, "user", None))
    request._chats_roles = roles
    return roles
