"""Who may read the health endpoint that chats/api/health_views.py serves: staff only (is_staff: the auditors, staff
and superusers), by session; rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:health": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         405,         403,         405,         405),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
