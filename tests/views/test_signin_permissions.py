"""Who may use sign-in (chats/views/signin.py: SignInView) and sign-out (Django's LogoutView, beside it): rows of the
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
    # Sign-in and sign-out are open to everyone. The sign-in form is shown to all (already signed in too);
    # a wrong password answers the form again. Signing out is a POST (GET: 405) that lands on the sign-in page.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    # a wrong password answers the form again. Signing out is a POST (GET: 405) that lands on the sign-in page.
    "login": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(200,         200,         200,         200,         200,         200,         200,         200,         200),
    },
    "logout": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN),
    },
}
# fmt: on


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
