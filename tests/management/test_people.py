"""`create_user` and `set_role`: a person made with a role may do what the permission matrix says that role may,
signs in with the password printed once, and a role set again replaces the old one."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from chats.roles import Roles, person_roles
from tests.admin.test_site_permissions import EXPECTED as SITE_ROWS
from tests.security.permission_matrix import ADMIN_LOGIN, LOGIN
from tests.views.test_audit_permissions import EXPECTED as AUDIT_ROWS

pytestmark = pytest.mark.django_db

# Each role, and the matrix's principal made by hand as the README describes that role.
MATRIX_PRINCIPAL = {"reviewer": "reviewer", "auditor": "auditor", "admin": "superuser"}


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _answer(client: Client, path: str) -> Any:
    response = client.get(path)
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/accounts/login/"):
            return LOGIN
        if location.startswith("/admin/login/"):
            return ADMIN_LOGIN
    return response.status_code


@pytest.mark.parametrize("role", sorted(MATRIX_PRINCIPAL))
def test_a_person_created_with_a_role_gets_the_matrix_answers_of_that_role(role: str) -> None:
    password = _run("create_user", f"new-{role}", "--role", role).splitlines()[-1]
    client = Client()
    signed_in = client.post("/accounts/login/", {"username": f"new-{role}", "password": password})
    assert signed_in.status_code == 302 and not signed_in["Location"].startswith("/accounts/login/")
    principal = MATRIX_PRINCIPAL[role]

    assert _answer(client, "/audit/") == AUDIT_ROWS["chats:audit_list"]["GET"][principal]
    assert _answer(client, "/admin/") == SITE_ROWS["admin:index"]["GET"][principal]
    assert _answer(client, "/conversations/") == 200


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        (["reviewer"], Roles(can_read=True, can_write=True)),
        (["auditor"], Roles(can_read=True, can_write=False, can_audit=True)),
        (["lead"], Roles(can_read=True, can_write=False, can_lead=True)),
        (["lead", "reviewer"], Roles(can_read=True, can_write=True, can_lead=True)),
        (["admin"], Roles(can_read=True, can_write=True, can_audit=True, can_lead=True)),
    ],
)
def test_each_role_reads_writes_audits_and_leads_as_the_roles_say(roles: list[str], expected: Roles) -> None:
    _run("create_user", "pat", *[arg for role in roles for arg in ("--role", role)])
    assert person_roles(User.objects.get(username="pat")) == expected


def test_a_lead_creates_queues_and_a_reviewer_does_not() -> None:
    _run("create_user", "lena", "--role", "reviewer")
    client = Client()
    client.force_login(User.objects.get(username="lena"))
    assert client.post("/queues/new/", {}).status_code == 403
    assert _run("set_role", "lena", "--role", "lead").strip() == "lena: reviewer -> lead"
    assert client.post("/queues/new/", {}).status_code in (200, 400)  # the form, with what is missing
    assert person_roles(User.objects.get(username="lena")).can_write is False  # the reviewer role is gone


def test_refusals_name_what_is_wrong() -> None:
    _run("create_user", "pat", "--role", "reviewer")
    with pytest.raises(CommandError, match="already exists"):
        _run("create_user", "pat", "--role", "lead")
    with pytest.raises(CommandError, match="No user 'ghost'"):
        _run("set_role", "ghost", "--role", "lead")
    with pytest.raises(CommandError):
        _run("create_user", "sam", "--role", "janitor")
    assert not User.objects.filter(username="sam").exists()
