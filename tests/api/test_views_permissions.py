"""Who may use the reading and feedback API that chats/api/views.py serves (conversations and their exports, artifacts,
labels, the bulk export, feedback): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Reading API: a source's key reads its own source's conversations (B's lists and exports are scoped to
    # B: 200 without A's rows, see tests/security/test_source_isolation.py), people read with Reviewers, Auditors or staff (no role: 403),
    # no credentials: 401. Read-only endpoints refuse the write methods with 405 once the caller may read.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:artifacts": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # One artifact of A's conversation: source B's key sees none of A's conversations, so for it the artifact
    # does not exist (404).
    "api:artifact-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # The artifact list as NDJSON (B's is scoped to B, see tests/security/test_source_isolation.py); audited.
    "api:artifacts-export": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    "api:labels": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # Bulk export in every format and as training JSONL.
    "api:export": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    "api:conversation-list": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # A's conversation: source B's key gets 404, as if it did not exist. The method check (405) comes after the
    # permission check and before the lookup, so B's key gets 405 on writes.
    "api:conversation-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "PUT":                         row(401,         405,         405,         405,         405,         405,         403,         405,         405),
        "PATCH":                       row(401,         405,         405,         405,         405,         405,         403,         405,         405),
        "DELETE":                      row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # The conversation's export in each of the six formats.
    "api:conversation-export": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },

    # ---- Feedback API: every reader reads (scoped for keys: B does not see feedback on A's conversation, 404);
    # writing needs Reviewers or a superuser, so keys, auditors, staff and no role get 403 before any lookup.
    # POST gives conversation-level feedback (the first reviewer has none yet): 201 for each writer.
    "api:feedback-list": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         403,         403,         403,         201),
    },
    # The first reviewer's feedback: the other reviewer may not change (403) or delete (403) it. PUT is not
    # offered (405) once the write permission passed. A superuser manages anyone's feedback, as on the pages and in
    # the admin.
    "api:feedback-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "PUT":                         row(401,         403,         403,         405,         405,         403,         403,         403,         405),
        "PATCH":                       row(401,         403,         403,         200,         403,         403,         403,         403,         200),
        "DELETE":                      row(401,         403,         403,         204,         403,         403,         403,         403,         204),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
