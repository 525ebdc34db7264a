"""Who may use the admin pages that chats/admin/receipts.py serves (ingestion receipts and their payload download, the
payloads, the bytes each key sent per day): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Admin: receipts, like all ingested data, are read-only for everyone, superusers included: add, change
    # (POST) and delete are 403, the change page is a view page (200). Auditors view them.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    # Receipts have one action, removing old payloads, for superusers only (it needs change_ingestionreceipt): its
    # POST answers the page that counts what would go, and removes nothing until that page is confirmed.
    "admin:chats_ingestionreceipt_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_ingestionreceipt_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/ingestionreceipt/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    # A receipt's payload, as the exact bytes: to whoever may view receipts.
    "admin:chats_ingestionreceipt_payload": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    # The payloads receipts name: read-only like the receipts, which Auditors read.
    "admin:chats_receiptpayload_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_receiptpayload_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/receiptpayload/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # What each key sent per day (the daily quota's counters): read-only, to those who see keys.
    "admin:chats_apikeydailyusage_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_apikeydailyusage_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/apikeydailyusage/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
