"""Who may use the datasets API that chats/api/dataset_views.py serves: rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Datasets: people only, as team review. Everyone with a reading role lists and reads them; only leads
    # (the superuser) take a snapshot; the export holds the gold answers, so like a resolution it is for leads
    # and those who audit (auditors and staff). A view without POST answers 405 once the caller passed the role
    # check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:dataset-list": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    "api:dataset-detail": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    "api:dataset-export": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
