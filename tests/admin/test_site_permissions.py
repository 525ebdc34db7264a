"""Who may use the admin site's own pages, which Django's AdminSite serves (django.contrib.admin.sites): its index,
sign-in and sign-out, password change, autocomplete, jsi18n, "view on site", an app's index and its catch-all:
rows of the permission matrix, run by tests/security/permission_matrix.py.

The pages of each registered model are in the file of the chats/admin/ module that registers it."""

from __future__ import annotations

from tests.security.permission_matrix import (
    ADMIN_LOGIN,
    LOGIN,
    Row,
    World,
    check_rows,
    row,
    world,  # noqa: F401  (the fixture)
)

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # ---- Admin site. Only active staff get past admin_view: everyone else (an API key is anonymous here) is
    # sent to the admin's sign-in. Sign-in itself is open (a signed-in staff member is sent on to the index);
    # sign-out is a POST; without staff rights it redirects to the index (302), which then asks to sign in.
    # Plain staff without permissions see an empty index, 404 for an app's index and 403 for every model page.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "admin:index":           {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200)},
    "admin:login": {
        "GET":                         row(200,         200,         200,         200,         200,         302,         200,         302,         302),
        "POST":                        row(200,         200,         200,         200,         200,         200,         200,         200,         200),
    },
    "admin:logout": {
        "GET":                         row(302,         302,         302,         302,         302,         405,         302,         405,         405),
        "POST":                        row(302,         302,         302,         302,         302,         LOGIN,       302,         LOGIN,       LOGIN),
    },
    # Changing one's own password needs the old one: a wrong one answers the form again.
    "admin:password_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
    },
    "admin:password_change_done": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
    },
    # No admin declares autocomplete fields: the view refuses every request (403).
    "admin:autocomplete":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403)},
    "admin:jsi18n":          {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200)},
    # "View on site" of the conversation redirects to its thread, which every staff member may read.
    "admin:view_on_site":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302)},
    # /admin/chats/: shown when the user may view a model of the app.
    "admin:app_list":        {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 404,         200)},
    # An unknown admin URL asks to sign in first, so that it does not tell which URLs exist.
    "admin/(?P<url>.*)$":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 404,         ADMIN_LOGIN, 404,         404)},
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
