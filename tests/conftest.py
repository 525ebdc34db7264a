"""Shared fixtures: people with each role, sources with keys, and API clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from chats.models import Source
from chats.services.sources import api_key_create
from tests import flush

flush.install()

# Speed is measured by the benchmarks, not by the tests: no property example fails for taking long on a busy machine
# (hypothesis's default deadline is 200 ms an example).
hypothesis_settings.register_profile("masterbrain", deadline=None)
hypothesis_settings.load_profile("masterbrain")

TESTS = Path(__file__).resolve().parent
# Feature folders whose every test carries the folder's marker, so that `-m` selects them whatever they are called.
FOLDER_MARKERS = {"browser": "browser", "reliability": "servers"}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Tests under tests/browser and tests/reliability carry their folder's marker (before `-m` selects)."""
    folder = item.path.relative_to(TESTS).parts[0] if item.path.is_relative_to(TESTS) else ""
    if marker := FOLDER_MARKERS.get(folder):
        item.add_marker(marker)


@pytest.hookimpl(trylast=True)  # after pytest-xdist has named the groups in the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A parallel run whose xdist groups were not applied is refused. Tests marked `postgres` need PostgreSQL
    features; they are skipped only when the suite runs on SQLite."""
    from django.conf import settings

    if config.getoption("dist", default="no") == "loadgroup" or config.getoption("loadgroup", default=False):
        ungrouped = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
        if ungrouped:
            raise pytest.UsageError(f"pytest-xdist did not group {ungrouped[0]}: its xdist_group would be ignored")
    if settings.IS_POSTGRES:
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (the suite is running on SQLite)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    # Throttles count in the cache: each test starts with none of another test's requests counted.
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings: Any) -> None:
    # The default hasher takes about a second per user; tests sign in with known passwords or force_login.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _user_in(username: str, group: str | None, **extra: Any) -> User:
    user = User.objects.create_user(username=username, password="correct horse battery staple", **extra)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def reviewer(db: None) -> User:
    return _user_in("rita", "Reviewers")


@pytest.fixture
def other_reviewer(db: None) -> User:
    return _user_in("oscar", "Reviewers")


@pytest.fixture
def auditor(db: None) -> User:
    return _user_in("aude", "Auditors")


@pytest.fixture
def no_role_user(db: None) -> User:
    return _user_in("nobody", None)


@pytest.fixture
def admin_user(db: None) -> User:
    return User.objects.create_superuser(username="admin", password="correct horse battery staple")


@pytest.fixture
def source(db: None) -> Source:
    return Source.objects.create(name="masterbrain")


@pytest.fixture
def other_source(db: None) -> Source:
    return Source.objects.create(name="other-logger")


@pytest.fixture
def ingest_key(source: Source) -> str:
    _, raw = api_key_create(source=source, name="test")
    return raw


@pytest.fixture
def other_ingest_key(other_source: Source) -> str:
    _, raw = api_key_create(source=other_source, name="test")
    return raw


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def ingest_client(ingest_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {ingest_key}")
    return client
