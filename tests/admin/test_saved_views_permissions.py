"""Who may use the admin pages that chats/admin/saved_views.py serves (saved views, read-only): rows of the
permission matrix, run by tests/security/permission_matrix.py."""

from __future__ import annotations

from tests.admin.test_jobs_permissions import READ_ONLY
from tests.security.permission_matrix import (
    Row,
    World,
    check_rows,
    world,  # noqa: F401  (the fixture)
)

MODELS = ("savedview",)

# Saved views are read-only in the admin for everyone, superusers included (their owners change them on the pages
# and the API), as the background jobs are: the jobs' rows, per model.
EXPECTED: dict[str, dict[str, Row]] = {
    key.format(model=model): rows for model in MODELS for key, rows in READ_ONLY.items()
}


def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World) -> None:  # noqa: F811
    check_rows(world, EXPECTED)
