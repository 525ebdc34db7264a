"""Where reads go: the routing rule of chats/db_router.py, decided without a real replica.

Without DATABASE_REPLICA_URL everything reads and writes ``default``. With a ``replica`` alias configured as a test
mirror of ``default`` (what settings.py does when DATABASE_REPLICA_URL is set), the lag-tolerant pages run their
content queries on the replica's connection and the rest on the primary's. The real streaming replica, with its
lag, its pauses and its failures, is in tests/reliability/test_replica.py; the mirror in test_db_router_mirror.py.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import Client
from django.urls import reverse
from django.views.decorators.http import require_GET

from chats import db_router
from chats.db_router import (
    REPLICA,
    ReplicaPosition,
    ReplicaRouter,
    Route,
    lag_tolerated,
    lsn,
    replica_lag_tolerated,
    route,
)
from chats.models import Conversation, Source
from tests import factories
from tests.security.permission_matrix import url_views

# engines: the replica is configured per engine; CI runs this file again on SQLite.
pytestmark = pytest.mark.engines

PRIMARY = DEFAULT_DB_ALIAS


def test_wal_positions_order_as_postgresql_orders_them() -> None:
    assert lsn("0/16B3748") < lsn("0/16B3750") < lsn("1/0") < lsn("16/B374D848")
    assert lsn("0/0") == 0


@pytest.mark.parametrize(
    ("replica", "written", "expected"),
    [
        (ReplicaPosition(replayed=100, lag_seconds=0.2), None, Route(REPLICA, primary_fallback=False)),
        (ReplicaPosition(replayed=100, lag_seconds=0.2), 100, Route(REPLICA, primary_fallback=False)),
        # The reader wrote past what the replica has replayed: their reads stay on the primary, as is normal.
        (ReplicaPosition(replayed=100, lag_seconds=0.2), 101, Route(PRIMARY, primary_fallback=False)),
        # Lagging beyond the limit, or down: everyone reads the primary, and the pages say so.
        (ReplicaPosition(replayed=100, lag_seconds=5.5), None, Route(PRIMARY, primary_fallback=True)),
        (None, None, Route(PRIMARY, primary_fallback=True)),
        (None, 101, Route(PRIMARY, primary_fallback=True)),
    ],
)
def test_route_of_a_lag_tolerant_read(replica: ReplicaPosition | None, written: int | None, expected: Route) -> None:
    assert route(replica, written, max_lag_seconds=5) == expected


def test_the_views_that_declare_they_tolerate_lag_are_the_reads_of_conversations_artifacts_and_exports() -> None:
    declared = {key for key, view in url_views() if lag_tolerated(view)}

    assert declared == {
        "chats:conversation_list",
        "chats:thread",
        "chats:artifact_list",
        "chats:artifact_detail",
        "api:conversation-list",
        "api:conversation-detail",
        "api:conversation-export",
        "api:artifacts",
        "api:artifact-detail",
        "api:export",
        "api:artifacts-export",
    }


def test_a_view_declares_it_tolerates_lag_through_its_other_decorators() -> None:
    def inner(request: object) -> None:
        return None

    def outer(request: object) -> None:
        return None

    def undeclared(request: object) -> None:
        return None

    assert lag_tolerated(require_GET(replica_lag_tolerated(inner)))
    assert lag_tolerated(replica_lag_tolerated(require_GET(outer)))
    assert not lag_tolerated(require_GET(undeclared))


def test_writes_go_to_the_primary_and_migrations_never_run_on_the_replica() -> None:
    router = ReplicaRouter()
    assert router.db_for_write(Conversation) == PRIMARY
    assert router.allow_migrate(PRIMARY, "chats") is True
    assert router.allow_migrate(REPLICA, "chats") is False


@pytest.mark.django_db
def test_without_a_replica_every_query_of_a_page_runs_on_default(client: Client, reviewer: User) -> None:
    conversation = factories.make_conversation(Source.objects.create(name="masterbrain"), title="Primer design")
    client.force_login(reviewer)

    assert not db_router.replica_configured()
    assert Conversation.objects.all().db == PRIMARY
    response = client.get(reverse("chats:thread", args=[conversation.uuid]))

    assert response.status_code == 200 and b"Primer design" in response.content
    assert b"replica-notice" not in response.content
    assert list(connections) == [PRIMARY]
