"""Who may use the team review API's items that chats/api/review_item_views.py serves (assignment, release, drafts,
reviews and resolutions): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Team review API, a queue's items: people only (a source's key: 403), as the queues (see
    # test_review_views_permissions.py). A view without GET answers 405 once the caller passed the role check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
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
    # Blind: the reviewers see only their own review until they submitted (still 200); see tests/api.
    "api:queue-item-reviews": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         403,         403,         403,         403),
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
