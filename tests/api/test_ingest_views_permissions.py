"""Who may use the ingestion API that chats/api/ingest_views.py serves (ingesting, receipts and their payload):
rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Ingestion: only a source's key, which writes into its own source (B sending the same document makes
    # B's own conversation: 201, nothing of A's is touched). No credentials: 401. A person, whatever their role,
    # is not a source: with a personal token 403 (see tests/security/test_source_isolation.py); with a session 401, since these endpoints
    # read only the Api-Key header, whatever the role.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:ingest": {
        "GET":                         row(401,         405,         405,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         201,         201,         401,         401,         401,         401,         401,         401),
    },
    "api:ingest-bulk": {
        "GET":                         row(401,         405,         405,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         200,         200,         401,         401,         401,         401,         401,         401),
    },
    # A receipt is shown to the source it belongs to; to another source's key it does not exist (404); a session
    # is not read here (401).
    "api:receipt": {
        "GET":                         row(401,         200,         404,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         405,         405,         401,         401,         401,         401,         401,         401),
    },
    "api:receipt-payload": {
        "GET":                         row(401,         200,         404,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         405,         405,         401,         401,         401,         401,         401,         401),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
