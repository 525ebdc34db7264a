"""Who may read the API's docs (chats/api/docs.py) and the OpenAPI schema they render (drf-spectacular's own view,
declared here beside them): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # The OpenAPI schema and its docs describe the API and hold no data: public, as drf-spectacular serves them
    # by default (SERVE_PERMISSIONS: AllowAny).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:schema": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(405,         405,         405,         405,         405,         405,         405,         405,         405),
    },
    "api:docs": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(405,         405,         405,         405,         405,         405,         405,         405,         405),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
