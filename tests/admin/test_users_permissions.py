"""Who may use the admin pages that chats/admin/users.py serves (users, their password, groups: the roles):
rows of the permission matrix, run by tests/security/permission_matrix.py."""

from __future__ import annotations

from tests.security.permission_matrix import (
    ADMIN_LOGIN,
    Row,
    World,
    check_rows,
    row,
    world,  # noqa: F401  (the fixture)
)

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # ---- Admin: users and roles. Only superusers (auditors have no permission on them). The changelist POST
    # deletes a user who never wrote feedback (302), the add and change forms are complete (302), a user's
    # password is set from its own page (302). Deleting a user or a role shows its confirmation page (200) on GET.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "admin:auth_user_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:auth_user_password_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    # The bare object URL redirects to its change page for every staff member; that page checks permissions.
    "admin/auth/user/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:auth_group_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/auth/group/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
