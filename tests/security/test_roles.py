"""The roles' groups and their permissions come from one table, `chats.roles.ROLE_PERMISSIONS`, and are there after
`migrate` and after a flush (which a transactional test does when it ends)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS

from chats.roles import NONE, ROLE_PERMISSIONS, Roles
from tests.flush import truncation_allowed


def _granted() -> dict[str, set[str]]:
    return {
        group.name: {permission.codename for permission in group.permissions.all()}
        for group in Group.objects.filter(name__in=ROLE_PERMISSIONS).prefetch_related("permissions")
    }


def _expected() -> dict[str, set[str]]:
    return {name: set(codenames) for name, codenames in ROLE_PERMISSIONS.items()}


@pytest.mark.django_db
def test_a_migrated_database_has_each_role_with_exactly_its_permissions() -> None:
    assert _granted() == _expected()


@pytest.mark.django_db(transaction=True)
def test_the_roles_come_back_after_a_flush_with_every_permission() -> None:
    # As the test suite flushes: the audit log refuses TRUNCATE on PostgreSQL, unless its triggers are set aside.
    with truncation_allowed([DEFAULT_DB_ALIAS]):
        call_command("flush", interactive=False, verbosity=0)
    assert _granted() == _expected()


@pytest.mark.django_db
def test_every_permission_a_role_names_exists() -> None:
    from django.contrib.auth.models import Permission

    named = {codename for codenames in ROLE_PERMISSIONS.values() for codename in codenames}
    existing = set(
        Permission.objects.filter(content_type__app_label="chats", codename__in=named).values_list(
            "codename", flat=True
        )
    )
    assert named - existing == set()


@pytest.mark.parametrize(
    ("roles", "oversees"),
    [
        (Roles(can_read=True, can_write=True), False),
        (Roles(can_read=True, can_write=False, can_audit=True), True),
        (Roles(can_read=True, can_write=False, can_lead=True), True),
        (NONE, False),
    ],
    ids=["reviewer", "auditor", "lead", "nobody"],
)
def test_leads_and_auditors_oversee_the_reviews_and_no_one_else(roles: Roles, oversees: bool) -> None:
    assert roles.can_oversee is oversees
