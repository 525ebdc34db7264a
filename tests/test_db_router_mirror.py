"""With a replica configured (a test mirror of ``default``, as settings.py configures DATABASE_REPLICA_URL for tests),
the lag-tolerant pages run their content queries on the replica's connection, and the rest on the primary's.

The mirror is a connection of its own to the test database: it sees what the tests commit, hence transaction=True.
Its alias exists for this module only (module-scoped, so that it is there before each test's database setup).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chats import db_router
from chats.db_router import REPLICA, ReplicaRouter
from chats.models import ApiKey, AuditEvent, Conversation, Feedback, Source
from tests import factories

PRIMARY = DEFAULT_DB_ALIAS

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, databases=[PRIMARY, REPLICA])]


@pytest.fixture(scope="module", autouse=True)
def replica_mirror() -> Iterator[None]:
    connections.settings[REPLICA] = {**connections[PRIMARY].settings_dict, "TEST": {"MIRROR": PRIMARY}}
    connections[REPLICA].creation.set_as_test_mirror(connections[PRIMARY].settings_dict)
    try:
        yield
    finally:
        connections[REPLICA].close()
        del connections[REPLICA]
        del connections.settings[REPLICA]


def tables(queries: CaptureQueriesContext) -> str:
    return " ".join(query["sql"] for query in queries.captured_queries)


def main_tables(queries: CaptureQueriesContext) -> set[str]:
    """The table each query reads or writes first (a subquery's tables aside)."""
    return {
        match.group(1)
        for query in queries.captured_queries
        if (match := re.search(r'(?:FROM|INTO|UPDATE) "(\w+)"', query["sql"]))
    }


def test_with_a_replica_lag_tolerant_pages_read_their_content_from_it(client: Client, reviewer: User) -> None:
    conversation = factories.make_conversation(Source.objects.create(name="masterbrain"), title="Primer design")
    client.force_login(reviewer)

    with CaptureQueriesContext(connections[PRIMARY]) as primary, CaptureQueriesContext(connections[REPLICA]) as replica:
        response = client.get(reverse("chats:conversation_list"))

    assert response.status_code == 200 and b"Primer design" in response.content
    assert b"replica-notice" not in response.content
    assert "pg_last_wal_replay_lsn" in tables(replica) and '"chats_conversation"' in tables(replica)
    # Sessions, people and sources (the filter's choices) stay on the primary; no conversation is read there.
    assert {"django_session", "auth_user"} <= main_tables(primary)
    assert "chats_conversation" not in main_tables(primary)

    with CaptureQueriesContext(connections[PRIMARY]) as primary, CaptureQueriesContext(connections[REPLICA]) as replica:
        response = client.get(reverse("chats:thread", args=[conversation.uuid]))

    assert response.status_code == 200
    assert {"chats_conversation", "chats_message"} <= main_tables(replica)
    assert not {"chats_conversation", "chats_message", "chats_toolcall"} & main_tables(primary)
    # The read audit's view is a write: on the primary.
    assert 'INSERT INTO "chats_readevent"' in tables(primary)


def test_with_a_replica_other_pages_and_every_write_use_the_primary(client: Client, reviewer: User) -> None:
    conversation = factories.make_conversation(Source.objects.create(name="masterbrain"), n_messages=3)
    answer = factories.last_assistant(conversation)
    client.force_login(reviewer)

    with CaptureQueriesContext(connections[REPLICA]) as replica:
        assert client.get(reverse("chats:home")).status_code == 200
        assert client.get(reverse("chats:queue_list")).status_code == 200
        response = client.post(
            reverse("chats:feedback_save", args=[conversation.uuid]), {"message": answer.pk, "score": "1"}
        )

    assert response.status_code == 302
    assert replica.captured_queries == []
    assert Feedback.objects.filter(author=reviewer, message=answer, score=1).exists()
    # The writer's WAL position is remembered, under their session, for their next reads.
    key = db_router.reader_key(session=client.cookies[settings.SESSION_COOKIE_NAME].value)
    assert key is not None and cache.get(key) > 0


def test_reads_of_keys_sources_and_audit_stay_on_the_primary_within_a_replica_read() -> None:
    router = ReplicaRouter()
    state = db_router._Routing(read_alias=REPLICA)
    token = db_router._current.set(state)
    try:
        assert router.db_for_read(Conversation) == REPLICA
        assert router.db_for_read(Feedback) == REPLICA
        for model in (ApiKey, Source, AuditEvent, User):
            assert router.db_for_read(model) == PRIMARY
        assert not state.wrote
        router.db_for_write(AuditEvent)
        assert not state.wrote  # the audit log is no write a reader reads back from the replica
        router.db_for_write(Feedback)
        assert state.wrote
    finally:
        db_router._current.reset(token)


@pytest.mark.django_db(databases=[PRIMARY, REPLICA])  # the test in a transaction, as most tests run
def test_inside_a_transaction_on_the_primary_every_read_stays_on_it(client: Client, reviewer: User) -> None:
    factories.make_conversation(Source.objects.create(name="masterbrain"), title="Primer design")
    client.force_login(reviewer)

    with CaptureQueriesContext(connections[REPLICA]) as replica:
        response = client.get(reverse("chats:conversation_list"))

    assert response.status_code == 200 and b"Primer design" in response.content
    assert replica.captured_queries == []
