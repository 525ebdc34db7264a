"""Who may use a queue's rules that chats/api/review_rule_views.py serves: rows of the permission matrix, run by
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
    # ---- Team review API, a queue's rules: people only (a source's key: 403), as the queues (see
    # test_review_views_permissions.py). A view without GET answers 405 once the caller passed the role check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    # A queue's rules: leads and those who audit read them (reviewers, members or not, do not); only a lead
    # creates, changes, deletes or runs one.
    "api:queue-rules": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    "api:queue-rule": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "PATCH":                       row(401,         403,         403,         403,         403,         403,         403,         403,         200),
        "DELETE":                      row(401,         403,         403,         403,         403,         403,         403,         403,         204),
    },
    # A run is carried out by a worker: 202 with its record, read by those who read rules.
    "api:queue-rule-run": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         202),
    },
    "api:queue-rule-run-detail": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
