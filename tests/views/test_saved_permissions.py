"""Who may use the saved views pages that chats/views/saved.py serves: rows of the permission matrix, run by
tests/security/permission_matrix.py."""

from __future__ import annotations

from tests.security.permission_matrix import (
    LOGIN,
    Row,
    World,
    check_rows,
    row,
    world,  # noqa: F401  (the fixture)
)

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # Saved views: every reading role lists its own and the shared ones and saves views (a redirect to the list
    # with the view's filters). The view in the URLs is the first reviewer's, personal: to everyone else it does
    # not exist (404). Only leads and superusers share, so the reviewer sharing their own view is refused (403).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:saved_view_list":   {"GET": row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:saved_view_menu":   {"GET": row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:saved_view_create": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         302,         403,         302,         302),
    },
    "chats:saved_view_share": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         404,         404,         403,         404,         404),
    },
    "chats:saved_view_delete": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         404,         404,         403,         404,         404),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
