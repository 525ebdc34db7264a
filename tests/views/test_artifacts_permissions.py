"""Who may use the artifact pages that chats/views/artifacts.py serves: rows of the permission matrix, run by
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
    # An API key means nothing to a page: key holders are anonymous there and, like anonymous visitors, are sent
    # to sign in. Reading needs Reviewers, Auditors or staff (no role: 403).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    # Artifacts: read like conversations.
    "chats:artifact_list":   {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:artifact_detail": {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
