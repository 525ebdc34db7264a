"""Who may use the export jobs API that chats/api/export_job_views.py serves: rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # Export jobs: whoever may export asks for one (202; a source's key over its own source) and lists their own.
    # The job in the URLs is the first reviewer's: to everyone else, whatever their role, it does not exist (404).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:export-jobs": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         202,         202,         202,         202,         202,         403,         202,         202),
    },
    "api:export-job-detail": {
        "GET":                         row(401,         404,         404,         200,         404,         404,         403,         404,         404),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    "api:export-job-download": {
        "GET":                         row(401,         404,         404,         200,         404,         404,         403,         404,         404),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
