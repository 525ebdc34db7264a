"""Who may use the audit section that chats/views/audit.py serves: rows of the permission matrix, run by
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
    # The audit section: Auditors, staff and superusers (Roles.can_audit); reviewers and people with no role get
    # 403; an API key is anonymous here (there is no audit API). The export is audited ("audit.exported").
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:audit_list":      {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:audit_event":     {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:audit_export":    {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
