"""Search vectors are built by a background task once an ingestion commits: inline without a broker (as in `make
run` and here), on a Celery worker with one; a burst of ingestions sends one task; MASTERBRAIN_SEARCH_INDEXER=command
leaves them to `manage.py index_search`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.test import APIClient

from chats.models import Conversation, Source
from chats.services import search
from chats.services.bulk_writer import conversations_ingest_bulk
from masterbrain_site.celery import app as celery_app
from tests import factories

BROKER = "redis://127.0.0.1:6379/9"
# The broker is that fixed Redis database, flushed by its tests: they run one at a time on one worker.
# engines: the indexer builds vectors on PostgreSQL and only clears marks on SQLite; CI runs this file again on SQLite.
pytestmark = [pytest.mark.xdist_group("redis-db-9"), pytest.mark.engines]


def _document(n: int) -> dict[str, Any]:
    return {"conversation_id": f"photo-{n}", "messages": factories.make_messages(2, with_tools=False, topic=f"t{n}")}


def _searchable(client: APIClient, words: str) -> int:
    answer = client.get("/api/v1/conversations/", {"q": words})
    assert answer.status_code == 200, answer.content
    return len(answer.json()["results"])


@pytest.mark.django_db
def test_what_an_ingestion_stored_is_indexed_once_it_commits(
    source: Source, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        factories.ingest(source, _document(1))
        assert Conversation.objects.get().search_stale  # until the ingestion commits
    assert len(callbacks) == 1
    assert not Conversation.objects.get().search_stale


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_task_builds_the_vector_that_search_reads(
    source: Source, reviewer: User, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        factories.ingest(source, _document(1))
    conversation = Conversation.objects.get()
    assert conversation.search_vector is not None and not conversation.search_stale
    client = APIClient()
    client.force_authenticate(reviewer)
    assert _searchable(client, "t1") == 1


@pytest.mark.django_db
def test_a_bulk_ingestion_schedules_its_conversations_once(
    source: Source, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        conversations_ingest_bulk(source=source, documents=[_document(n) for n in range(5)])
    assert Conversation.objects.count() == 5
    assert not Conversation.objects.filter(search_stale=True).exists()
    # One ingestion transaction on PostgreSQL's set-based path; one per document where it stores them one by one.
    assert 1 <= len(callbacks) <= 5


@pytest.mark.django_db
def test_a_replay_that_changes_nothing_sends_no_task(source: Source, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        factories.ingest(source, _document(1))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        factories.ingest(source, _document(1))
    assert callbacks == []


@pytest.mark.django_db
def test_with_the_command_as_indexer_ingestion_leaves_the_vectors_stale(
    source: Source, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MASTERBRAIN_SEARCH_INDEXER = "command"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        factories.ingest(source, _document(1))
    assert callbacks == []
    assert Conversation.objects.get().search_stale


@pytest.fixture
def broker(settings: Any) -> Iterator[redis.Redis]:
    """Tasks sent to a real Redis broker (nothing consumes them here), as the application sends them with
    CELERY_BROKER_URL set; the shared cache is Redis too, as in production."""
    # Read before the settings change: the Celery application reads its configuration from them.
    eager, url = celery_app.conf.task_always_eager, celery_app.conf.broker_url
    queue = redis.Redis.from_url(BROKER)
    queue.flushdb()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": BROKER}}
    app: Any = celery_app
    _point(app, BROKER, eager=False)
    try:
        yield queue
    finally:
        _point(app, url, eager=eager)
        queue.flushdb()
    assert celery_app.conf.task_always_eager == eager


def _point(app: Any, url: str, *, eager: bool) -> None:
    """Point the Celery application at `url`: its next connection and producer pools are that broker's."""
    app.conf.task_always_eager, app.conf.broker_url = eager, url
    app._pool = None
    app.amqp._producer_pool = None


def _sent(queue: redis.Redis) -> list[str]:
    raws: list[bytes] = queue.lrange("celery", 0, -1)  # type: ignore[assignment]  # a sync client
    return [json.loads(raw)["headers"]["task"] for raw in raws]


@pytest.mark.django_db
def test_with_a_broker_a_burst_of_ingestions_sends_one_task(
    source: Source, broker: redis.Redis, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A delay no loaded machine outlasts: the burst is one burst however slowly its ingestions run here.
    monkeypatch.setattr(search, "SCHEDULE_DELAY_SECONDS", 60)
    for n in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            factories.ingest(source, _document(n))
    assert _sent(broker) == ["chats.tasks.search.index_stale"]
    assert Conversation.objects.filter(search_stale=True).count() == 3  # for the worker

    # The worker's task lets the burst's key go as it starts: what is ingested after it sends the next task.
    from chats.tasks.search import index_stale

    assert index_stale.apply().get() == 3
    with django_capture_on_commit_callbacks(execute=True):
        factories.ingest(source, _document(9))
    assert _sent(broker) == ["chats.tasks.search.index_stale"] * 2


@pytest.mark.django_db
def test_with_a_cache_of_its_own_a_web_process_sends_the_next_task_once_the_delay_is_over(
    source: Source, broker: redis.Redis, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # No REDIS_URL: the worker's task cannot let this process's key go; the key lasts only as long as the delay.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    with django_capture_on_commit_callbacks(execute=True):
        factories.ingest(source, _document(1))
    assert _sent(broker) == ["chats.tasks.search.index_stale"]
    assert cache.get(search.SCHEDULED_KEY) is not None

    # The first task has started once its delay is over: what follows needs one of its own.
    deadline = time.monotonic() + search.SCHEDULE_DELAY_SECONDS + 10
    while cache.get(search.SCHEDULED_KEY) is not None:
        assert time.monotonic() < deadline, "the schedule's key outlived its delay"
        time.sleep(0.05)
    with django_capture_on_commit_callbacks(execute=True):
        factories.ingest(source, _document(9))
    assert _sent(broker) == ["chats.tasks.search.index_stale"] * 2
