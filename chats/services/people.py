"""People and their roles, without a shell: create a person with a role, or change a person's roles, audited.

A role is a group (chats.roles) and, for auditors and admins, the staff flag: an auditor is staff so that the
admin's view-only permissions apply (README, "People and roles"); an admin is a superuser. Setting roles replaces
the person's role groups and flags, and keeps any other group they are in. The management commands `create_user`
and `set_role` and the admin's user page go through these functions, so a change of role is audited one way.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.contrib.auth.models import Group, User
from django.db import transaction

from chats.errors import InvalidInput
from chats.roles import AUDITORS, LEADS, REVIEWERS
from chats.services.audit import Actor, audited

# Each role a command or the admin names, and its group (an admin has none: a superuser may do everything).
ROLE_GROUPS: dict[str, str | None] = {"reviewer": REVIEWERS, "lead": LEADS, "auditor": AUDITORS, "admin": None}
ROLES = tuple(ROLE_GROUPS)
# Who is staff: auditors read the admin, admins manage it.
STAFF_ROLES = frozenset({"auditor", "admin"})


def _checked(roles: Iterable[str]) -> list[str]:
    given = list(dict.fromkeys(roles))
    unknown = [role for role in given if role not in ROLE_GROUPS]
    if not given or unknown:
        raise InvalidInput([{"path": "/role", "message": f"must be one or more of {', '.join(ROLES)}"}])
    return given


def person_roles_of(user: User) -> list[str]:
    """The roles a person holds, in ROLES order (reads the user's groups; prefetch them for a list)."""
    groups = {group.name for group in user.groups.all()}
    return [role for role, group in ROLE_GROUPS.items() if (group in groups if group else user.is_superuser)]


def _apply(user: User, roles: list[str]) -> None:
    user.is_staff = bool(STAFF_ROLES.intersection(roles))
    user.is_superuser = "admin" in roles
    user.save()
    role_groups = [group for group in ROLE_GROUPS.values() if group]
    others = list(user.groups.exclude(name__in=role_groups))
    wanted = list(Group.objects.filter(name__in=[ROLE_GROUPS[role] for role in roles if ROLE_GROUPS[role]]))
    user.groups.set([*others, *wanted])


def person_create(*, username: str, roles: Iterable[str], email: str = "", actor: Actor) -> tuple[User, str]:
    """A new person with `roles` and a generated password, returned once (only its hash is stored)."""
    wanted = _checked(roles)
    username = username.strip()
    if not username or len(username) > 150:
        raise InvalidInput([{"path": "/username", "message": "must be 1 to 150 characters"}])
    if User.objects.filter(username=username).exists():
        raise InvalidInput([{"path": "/username", "message": f"{username!r} already exists: use set_role"}])
    password = secrets.token_urlsafe(16)
    with transaction.atomic(), audited(User(username=username, email=email.strip()), actor=actor) as user:
        user.set_password(password)
        _apply(user, wanted)
    return user, password


def person_roles_set(*, user: User, roles: Iterable[str], actor: Actor) -> None:
    """Give `user` exactly `roles` (their other groups stay); audited as "user.updated" when anything changed."""
    wanted = _checked(roles)
    with audited(user, actor=actor):
        _apply(user, wanted)
