"""Who may use the export jobs pages that chats/views/exports.py serves: rows of the permission matrix, run by
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
    # Export jobs: every reading role lists their own and runs an export as a job (a redirect to the list).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:export_jobs":     {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:export_job_create": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         302,         403,         302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
