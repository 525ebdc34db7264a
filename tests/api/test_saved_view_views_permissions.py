"""Who may use the saved views API that chats/api/saved_view_views.py serves: rows of the permission matrix, run by tests/security/permission_matrix.py."""

from __future__ import annotations

from tests.security.permission_matrix import (
    Row,
    World,
    check_rows,
    row,
    world,  # noqa: F401  (the fixture)
)

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # Saved views belong to people with a reading role; a source's key has none (403). Everyone lists their own and
    # the shared ones and saves a personal view (201). The view in the URL is the first reviewer's, personal: they
    # read, change and delete it; to everyone else it does not exist (404).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:saved-view-list": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         201,         403,         201,         201),
    },
    "api:saved-view-detail": {
        "GET":                         row(401,         403,         403,         200,         404,         404,         403,         404,         404),
        "PATCH":                       row(401,         403,         403,         200,         404,         404,         403,         404,         404),
        "PUT":                         row(401,         403,         403,         200,         404,         404,         403,         404,         404),
        "DELETE":                      row(401,         403,         403,         204,         404,         404,         403,         404,         404),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
