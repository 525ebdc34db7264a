"""Who may use the admin pages that chats/admin/audit.py serves (the audit log and its checkpoints, and the read
audit: who opened which conversation): rows of the permission matrix, run by tests/security/permission_matrix.py."""

from __future__ import annotations

from tests.security.permission_matrix import (
    ADMIN_LOGIN,
    Row,
    World,
    check_rows,
    row,
    world,  # noqa: F401  (the fixture)
)

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # ---- Admin: the audit log is read-only for everyone, superusers included: add, change (POST) and delete are
    # 403, the change page is a view page (200), and the changelist offers no action, so its POST shows the list
    # again (200). Auditors view it.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "admin:chats_auditevent_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_auditevent_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/auditevent/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # The audit chain's checkpoints (only verify_audit writes them): read-only like the log, and viewed by auditors.
    "admin:chats_auditcheckpoint_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_auditcheckpoint_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditcheckpoint_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditcheckpoint_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditcheckpoint_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/auditcheckpoint/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # Who opened which conversation: read-only too, and (like the labels given in feedback) no permission of the
    # Auditors group's: auditors read views on a conversation's Activity panel.
    "admin:chats_readevent_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_readevent_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_readevent_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_readevent_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_readevent_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/readevent/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
