"""The audit table's people paths (chats.services.people): `create_user` and `set_role` write one event each, with
the command as the actor and the person's groups and flags as they became. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from chats.models import Source
from chats.services.audit import audit_scope
from tests.security.audit_paths import (
    World,
    WritePath,
    check_write_path,
    command,
    declared_in,
    expect,
    make_world,
    user_row,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


def _run(*args: Any) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@write_path("command create_user", "service person_create")
def command_creates_an_auditor(w: World) -> list[dict[str, Any]]:
    out = _run("create_user", "aude", "--role", "auditor", "--email", "aude@example.org")
    user = User.objects.get(username="aude")
    assert user.check_password(out.splitlines()[-1])
    row = user_row(user, email="aude@example.org", is_staff=True, groups=["Auditors"])
    return [expect("user.created", command("create_user"), "user", user.pk, after=row)]


@write_path("command create_user", "service person_create")
def command_creates_a_lead_who_reviews(w: World) -> list[dict[str, Any]]:
    _run("create_user", "lena", "--role", "lead", "--role", "reviewer")
    user = User.objects.get(username="lena")
    row = user_row(user, groups=sorted(["Leads", "Reviewers"]))
    return [expect("user.created", command("create_user"), "user", user.pk, after=row)]


@write_path("command set_role", "service person_roles_set")
def command_makes_a_reviewer_an_admin_keeping_other_groups(w: World) -> list[dict[str, Any]]:
    with audit_scope():  # the world's setup, not the path: "Editors" is not a role, and it stays
        w.reviewer.groups.add(w.group)
    assert _run("set_role", w.reviewer.username, "--role", "admin").strip() == "rita: reviewer -> admin"
    before = {"is_staff": False, "is_superuser": False, "groups": ["Editors", "Reviewers"]}
    after = {"is_staff": True, "is_superuser": True, "groups": ["Editors"]}
    return [expect("user.updated", command("set_role"), "user", w.reviewer.pk, before=before, after=after)]


@write_path("command set_role", "service person_roles_set")
def command_setting_the_same_role_writes_nothing(w: World) -> list[dict[str, Any]]:
    _run("set_role", w.reviewer.username, "--role", "reviewer")
    assert list(w.reviewer.groups.values_list("name", flat=True)) == ["Reviewers"]
    assert Group.objects.filter(name="Reviewers").exists()
    return []


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
