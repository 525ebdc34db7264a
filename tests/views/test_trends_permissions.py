"""Who may open the Trends page (chats/views/trends.py): rows of the permission matrix, run by
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
    # Read like the dashboard: Reviewers, Auditors or staff (no role: 403); API keys mean nothing to a page.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:trends":          {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
}
# fmt: on


def test_each_principal_gets_the_expected_answer(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
