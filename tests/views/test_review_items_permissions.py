"""Who may use the review pages of one item and adjudication that chats/views/review_items.py serves: rows of the
permission matrix, run by tests/security/permission_matrix.py."""

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
    # Team review pages. Reading needs a reading role (no role: 403); the queue's page, its items and the
    # review page are seen by its members (the two reviewers), by those who audit (auditor, staff) and by leads
    # (the superuser). Leads create and edit queues, assign items, resolve them and add conversations (everyone
    # else: 403). Only members lease and review (the others, a lead too: 403, the service's NotAllowed). The
    # adjudication page is for leads and those who audit.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:queue_item":      {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:review_draft": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         403),
    },
    "chats:review_submit": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         403),
    },
    "chats:queue_adjudicate": {"GET":  row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:item_resolve": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
