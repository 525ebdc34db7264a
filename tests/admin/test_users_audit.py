"""The audit table's role actions on the admin's user list (chats/admin/users.py): giving the selected people one
role writes one "user.updated" event each, with the admin as actor. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Source
from tests.security.audit_paths import (
    World,
    WritePath,
    admin_post,
    check_write_path,
    declared_in,
    expect,
    make_world,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


def _act(w: World, action: str, *users: User) -> None:
    admin_post(w, "/admin/auth/user/", {"action": action, "_selected_action": [str(user.pk) for user in users]})


@write_path("admin auth.user action set_role_reviewer", "service person_roles_set")
def admin_makes_a_person_a_reviewer(w: World) -> list[dict[str, Any]]:
    _act(w, "set_role_reviewer", w.other_user, w.reviewer)  # the reviewer already is: no event for them
    after = {"groups": ["Reviewers"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before={"groups": []}, after=after)]


@write_path("admin auth.user action set_role_lead", "service person_roles_set")
def admin_makes_a_reviewer_a_lead(w: World) -> list[dict[str, Any]]:
    _act(w, "set_role_lead", w.reviewer)
    before, after = {"groups": ["Reviewers"]}, {"groups": ["Leads"]}
    return [expect("user.updated", w.admin, "user", w.reviewer.pk, before=before, after=after)]


@write_path("admin auth.user action set_role_auditor", "service person_roles_set")
def admin_makes_a_person_an_auditor(w: World) -> list[dict[str, Any]]:
    _act(w, "set_role_auditor", w.other_user)
    before = {"is_staff": False, "groups": []}
    after = {"is_staff": True, "groups": ["Auditors"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin auth.user action set_role_admin", "service person_roles_set")
def admin_makes_a_person_an_admin(w: World) -> list[dict[str, Any]]:
    _act(w, "set_role_admin", w.other_user)
    before = {"is_staff": False, "is_superuser": False}
    after = {"is_staff": True, "is_superuser": True}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


def test_the_user_list_and_page_show_the_roles(world: World, django_assert_max_num_queries: Any) -> None:
    client = world.page(world.admin)
    with django_assert_max_num_queries(12):
        page = client.get("/admin/auth/user/").content.decode()
    assert '<th scope="col" class="column-roles">' in page
    assert '<td class="field-roles">reviewer</td>' in page and '<td class="field-roles">admin</td>' in page
    change = client.get(f"/admin/auth/user/{world.reviewer.pk}/change/").content.decode()
    assert "Roles" in change and '<div class="readonly">reviewer</div>' in change


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
