"""Who may use the admin pages that chats/admin/sources.py serves (sources, the page that creates a key, API
keys): rows of the permission matrix, run by tests/security/permission_matrix.py."""

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
    # ---- Admin: sources. Auditors view them (their changelist offers them no action, so its POST shows the list
    # again: 200); superusers add and change them (through the services). A source with conversations cannot be
    # deleted (PROTECT): its delete page and the delete action answer 200 with the reasons and delete nothing.
    # Creating a key needs the view permission on the source and add_apikey: superusers only (the key is shown).
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "admin:chats_source_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_source_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_source_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_source_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_source_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/source/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_source_create_key": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },

    # ---- Admin: API keys. Nobody views them but superusers (auditors have no permission on keys); they are
    # made from a source's page and revoked with the changelist action (302), never added, edited or deleted.
    "admin:chats_apikey_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_apikey_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/apikey/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
