"""Who may use the admin pages that chats/admin/conversations.py serves (conversations, messages, tool calls,
injected artifacts, the ids injection contexts list): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Admin: ingested data and the audit log are read-only for everyone, superusers included: add, change
    # (POST) and delete are 403, the change page is a view page (200), and the changelist offers no action, so
    # its POST shows the list again (200). Auditors view all of them.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "admin:chats_conversation_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_conversation_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/conversation/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_message_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_message_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/message/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_modelcall_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_modelcall_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_modelcall_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_modelcall_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_modelcall_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/modelcall/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_toolcall_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_toolcall_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/toolcall/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_injectedartifact_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_injectedartifact_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/injectedartifact/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_contextartifactid_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_contextartifactid_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/contextartifactid/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
