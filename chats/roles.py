"""Who may do what: a person's roles are their groups (and the staff and superuser flags)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chats.errors import NotAllowed

REVIEWERS = "Reviewers"
AUDITORS = "Auditors"
LEADS = "Leads"

_READ_CONVERSATIONS = (
    "view_conversation",
    "view_message",
    "view_modelcall",
    "view_toolcall",
    "view_injectedartifact",
    "view_contextartifactid",
    "view_label",
    "view_feedback",
)
# Datasets: a reviewer sees that they exist; their gold items, like resolutions, are for leads and auditors.
_READ_DATASETS = ("view_dataset", "view_datasetitem", "view_datasetline")
_READ_TEAM_REVIEW = (
    "view_queue",
    "view_queuerule",
    "view_rubricversion",
    "view_queueitem",
    "view_review",
    "view_resolution",
)

# Each role's model permissions in the `chats` app, as the admin checks them. The groups are made from this one
# table after every `migrate` and every test flush (`ensure_role_groups`, on `post_migrate`).
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    REVIEWERS: (
        *_READ_CONVERSATIONS,
        "add_feedback",
        "change_feedback",
        "delete_feedback",
        "review_conversation",
        "view_dataset",
    ),
    AUDITORS: (
        *_READ_CONVERSATIONS,
        "view_source",
        "view_ingestionreceipt",
        "view_receiptpayload",
        "view_auditevent",
        "view_auditcheckpoint",
        "export_conversation",
        *_READ_TEAM_REVIEW,
        "view_lease",
        *_READ_DATASETS,
    ),
    LEADS: (
        *_READ_CONVERSATIONS,
        *_READ_TEAM_REVIEW,
        "add_queue",
        "change_queue",
        "add_queuerule",
        "change_queuerule",
        "delete_queuerule",
        "add_resolution",
        "change_resolution",
        *_READ_DATASETS,
        "add_dataset",
    ),
}


def ensure_role_groups(**_: Any) -> None:
    """Make the roles' groups and give each its permissions (idempotent; a permission given by hand stays).
    Connected to `post_migrate`, which Django sends after `migrate` and after a test's flush."""
    from django.apps import apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission

    create_permissions(apps.get_app_config("chats"), verbosity=0)
    for name, codenames in ROLE_PERMISSIONS.items():
        group = Group.objects.get_or_create(name=name)[0]
        group.permissions.add(*Permission.objects.filter(content_type__app_label="chats", codename__in=codenames))


@dataclass(frozen=True)
class Roles:
    can_read: bool
    can_write: bool
    can_audit: bool = False  # the audit section and a conversation's activity
    can_lead: bool = False  # review queues: create and edit them, assign items, adjudicate

    @property
    def can_oversee(self) -> bool:
        """See every reviewer's work: the adjudication lists, agreement, resolutions and datasets' gold items
        (leads and auditors)."""
        return self.can_lead or self.can_audit


NONE = Roles(can_read=False, can_write=False)

# What a lead-only action answers anyone else, page or API.
LEADS_ONLY = "Only leads can do this."


def lead_required(roles: Roles, message: str = LEADS_ONLY) -> None:
    """The one check of a lead-only action: refused (`NotAllowed`, a 403) unless `roles` lead. Each lead-only
    service makes it (so that no page or endpoint can skip it); a page or endpoint may make it first as well, so
    that a refusal comes before any complaint about the form."""
    if not roles.can_lead:
        raise NotAllowed(message)


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
