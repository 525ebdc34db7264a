"""Who may send OpenTelemetry traces (chats/api/otel_views.py): rows of the permission matrix, run by
tests/security/permission_matrix.py."""

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
    # ---- As the other ingestion endpoints: only a source's key, which writes into its own source. No credentials,
    # or a session (only the Api-Key header is read): 401.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:otel-traces": {
        "GET":                         row(401,         405,         405,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         200,         200,         401,         401,         401,         401,         401,         401),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
