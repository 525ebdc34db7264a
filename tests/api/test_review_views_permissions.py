"""Who may use the team review API that chats/api/review_views.py serves (queues, their items, rules, reviews
and resolutions): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # A lead assigns an item to a member (here the reviewer) or releases its slots, as on the queue's page.
    "api:queue-item-assign": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
    "api:queue-item-release": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
    # One's own draft only: none of these callers has saved one (404); the members save theirs, nobody else.
    "api:queue-item-draft": {
        "GET":                         row(401,         403,         403,         404,         404,         404,         403,         404,         404),
        "PUT":                         row(401,         403,         403,         200,         200,         403,         403,         403,         403),
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
    # Blind: the reviewers see only their own review until they submitted (still 200); see tests/api.
    "api:queue-item-reviews": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         403,         403,         403,         403),
    },
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
    # The item is resolved: leads and those who audit read it; only a lead resolves it again.
    "api:queue-item-resolution": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
