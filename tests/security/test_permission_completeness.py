"""Every URL pattern has exactly one row in the permission matrix, in the test file of the module that serves it.

The rows live beside each feature's tests: `tests/<package>/test_<module>_permissions.py` declares `EXPECTED` for the
URLs that chats' `<module>` serves, mirroring chats/ (tests/views/ for chats/views/; tests/api/ for chats/api/;
tests/admin/ for chats/admin/), and runs them with `check_rows` (tests/security/permission_matrix.py):
`tests/views/test_review_permissions.py` holds the pages of chats/views/review.py, and
`tests/admin/test_sources_permissions.py` the admin pages that chats/admin/sources.py registers. This file globs for
every such file, so that a new one joins by being there, and checks that:

- every URL pattern has a row, no row is for a pattern that no longer exists, and no pattern has rows in two files;
- every target resolves to the pattern it stands for, and sends a body only with a method its row lists;
- each file's rows are for URLs that its module serves. The module that serves a URL is the ModelAdmin's for an admin
  model's pages (its custom URLs too), the view class's for a class-based view, else the view function's. The few
  URLs that no chats module serves are declared where SERVED_OUTSIDE_CHATS says: Django's admin site (its index,
  sign-in and sign-out, password change, app index, catch-all...) in tests/admin/test_site_permissions.py, Django's
  sign-out beside the site's sign-in in tests/views/test_signin_permissions.py, drf-spectacular's schema beside the
  docs in tests/api/test_docs_permissions.py.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.security.permission_matrix import (
    PRINCIPALS,
    Row,
    World,
    build_targets,
    pattern_key,
    url_patterns,
    url_views,
    world,  # noqa: F401  (the fixture)
)

TESTS = Path(__file__).resolve().parent.parent
PATTERN = "test_*_permissions.py"
# The package of tests/ that mirrors each package of chats/.
CHATS_PACKAGES = {"": "chats", "views": "chats.views", "api": "chats.api", "admin": "chats.admin"}
# The module serving a URL outside chats -> the test module that declares its rows.
SERVED_OUTSIDE_CHATS = {
    "django.contrib.admin.sites": "tests.admin.test_site_permissions",
    "django.contrib.auth.views": "tests.views.test_signin_permissions",
    "drf_spectacular.views": "tests.api.test_docs_permissions",
}


def feature_modules() -> dict[str, dict[str, dict[str, Row]]]:
    """Every `tests/**/test_*_permissions.py` module's name, with its EXPECTED."""
    found = {}
    for path in sorted(TESTS.glob(f"**/{PATTERN}")):
        name = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)
        found[name] = importlib.import_module(name).EXPECTED
    return found


def chats_module_of(test_module: str) -> str:
    """tests.<package>.test_<module>_permissions -> the chats module whose URLs it holds."""
    package, _, name = test_module.removeprefix("tests.").rpartition(".")
    return f"{CHATS_PACKAGES[package]}.{name.removeprefix('test_').removesuffix('_permissions')}"


def served_by(view: Any) -> str:
    """The module of the code that serves a URL pattern's view."""
    if (model_admin := getattr(view, "model_admin", None)) is not None:
        return type(model_admin).__module__
    if (site := getattr(view, "admin_site", None)) is not None:
        return type(site).__module__
    view_class = getattr(view, "view_class", None) or getattr(view, "cls", None)
    return str((view_class or view).__module__)


def union() -> dict[str, dict[str, Row]]:
    return {key: methods for expected in feature_modules().values() for key, methods in expected.items()}


def test_the_feature_files_are_found_and_laid_out_as_chats_is() -> None:
    modules = feature_modules()

    assert len(modules) >= 20, sorted(modules)
    for name, expected in modules.items():
        package = name.removeprefix("tests.").rpartition(".")[0]
        assert package in CHATS_PACKAGES, f"{name}: rows belong in tests/, tests/views/, tests/api/ or tests/admin/"
        chats_module = chats_module_of(name)
        exists = importlib.util.find_spec(chats_module) is not None
        assert exists or name in SERVED_OUTSIDE_CHATS.values(), f"{name}: no module {chats_module}"
        assert expected, f"{name}: no rows"
        for key, methods in expected.items():
            assert methods, key
            for method, outcomes in methods.items():
                assert tuple(outcomes) == PRINCIPALS, f"{name}: {key} {method}"


def test_every_url_pattern_has_exactly_one_row() -> None:
    patterns = list(url_patterns())
    declared = Counter(key for expected in feature_modules().values() for key in expected)
    rows = set(declared)

    assert len(patterns) == len(set(patterns)), "two URL patterns share a key"
    assert {key for key, files in declared.items() if files > 1} == set(), "URL patterns with rows in two files"
    assert set(patterns) - rows == set(), "URL patterns without an expected row"
    assert rows - set(patterns) == set(), "expected rows for URL patterns that do not exist"


def test_each_file_holds_the_rows_of_the_urls_its_module_serves() -> None:
    home = {key: name for name, expected in feature_modules().items() for key in expected}

    misplaced = []
    for key, view in url_views():
        module = served_by(view)
        belongs = SERVED_OUTSIDE_CHATS.get(module)
        if key in home and (home[key] != belongs if belongs else chats_module_of(home[key]) != module):
            misplaced.append(f"{key}: served by {module}, its row is in {home[key]}")

    assert misplaced == [], "\n".join(misplaced)


@pytest.mark.django_db
def test_every_target_resolves_to_the_pattern_it_stands_for(world: World) -> None:  # noqa: F811
    targets = build_targets(world)
    expected = union()

    assert set(targets) == set(expected)
    for key, target in targets.items():
        for path in target.paths:
            assert pattern_key(path) == key, path
        assert set(target.bodies) <= set(expected[key]) - {"GET"}, key
