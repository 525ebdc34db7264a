"""Who may use the team review API's queues that chats/api/review_views.py serves (a queue's settings, progress,
items, next item and agreement): rows of the permission matrix, run by tests/security/permission_matrix.py. A queue's
items one by one are in test_review_item_views_permissions.py, its rules in test_review_rule_views_permissions.py."""

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
    # ---- Team review API: people only (a source's key: 403). Reading needs a reading role (no role: 403); a
    # reviewer sees the queues they work, auditors and staff (who audit) and superusers see all. Leads (here the
    # superuser) create queues, add conversations and resolve; members of the queue (the two reviewers) lease
    # items and submit reviews, and nobody else does (403), not even a lead who is not a member. A view without
    # GET answers 405 once the caller passed the role check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:queue-list": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    # A queue's settings: whoever sees the queue reads them; a lead changes them.
    "api:queue-detail": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "PATCH":                       row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
    # Progress: counts, no answers; for whoever sees the queue.
    "api:queue-progress": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    "api:queue-items": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
    # Agreement figures would tell a reviewer the others' answers: leads and those who audit only.
    "api:queue-agreement": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    "api:queue-next": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         200,         200,         403,         403,         403,         403),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
