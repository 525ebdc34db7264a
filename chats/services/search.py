"""The search index: conversations' search vectors, built apart from ingestion as a search engine's indexer is."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from chats.models import SEARCH_DOCUMENT_SQL, SEARCH_TEXT_LIMIT, Conversation
from chats.services.dispatch import SEARCH_INDEX_STALE, task_send

logger = logging.getLogger(__name__)

# A burst of ingestions shares one indexing task: the first takes this key and sends the task a second later, and
# what commits within that second leaves it to that task, which starts after they committed. The key lasts as long
# as the delay, so that it never outlives the task it stands for, even where the cache is each process's own (no
# REDIS_URL), where the task cannot let the web processes' keys go; with a shared cache the task lets it go as it
# starts, so that what is ingested while it runs sends the next one at once.
SCHEDULED_KEY = "search-index-scheduled"
SCHEDULE_DELAY_SECONDS = 1


def search_index(*, limit: int = 500) -> int:
    """Build the search vectors of up to `limit` stale conversations (those ingestion marked); how many it built.

    Ingestion leaves this apart, as a search engine's indexer does: a vector costs as much as the rest of the
    ingestion together. Rows an ingestion holds are skipped (SKIP LOCKED) and stay stale for the next round, so
    several indexers may run at once. On SQLite, which searches message text, it only clears the marks.
    """
    if connection.vendor != "postgresql":
        with transaction.atomic():
            ids = list(Conversation.objects.filter(search_stale=True).values_list("id", flat=True)[:limit])
            return Conversation.objects.filter(id__in=ids).update(search_stale=False)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH batch AS (
                SELECT id FROM chats_conversation WHERE search_stale ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
            )
            UPDATE chats_conversation c SET search_vector = {SEARCH_DOCUMENT_SQL}, search_stale = false
            FROM batch WHERE c.id = batch.id
            """,
            [limit, SEARCH_TEXT_LIMIT],
        )
        built: int = cursor.rowcount
        return built


# Conversations a step of the indexer builds and commits at once: a step of this workload's conversations (about 20
# messages with kilobytes of tool results each) takes about half a second, so that the first of a burst are served
# by the index soon, and several indexers share a burst (SKIP LOCKED) in small parts.
INDEX_BATCH = 100


def search_index_stale(*, batch: int = INDEX_BATCH) -> int:
    """Build every stale conversation's vector, `batch` at a time, each step committed; how many were built."""
    total = 0
    while built := search_index(limit=batch):
        total += built
    return total


def search_index_soon() -> None:
    """Have the stale conversations indexed once the current transaction commits: by a Celery worker, or inline
    where there is no broker (`make run`, the tests). MASTERBRAIN_SEARCH_INDEXER=command leaves it to
    `manage.py index_search --loop` instead. A failure to send is logged, never the ingestion's failure: the
    conversations stay stale, which search reads directly, and the next ingestion or the command picks them up."""
    if settings.MASTERBRAIN_SEARCH_INDEXER == "tasks":
        transaction.on_commit(_send, robust=True)


def _send() -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task_send(SEARCH_INDEX_STALE)
    elif cache.add(SCHEDULED_KEY, 1, timeout=SCHEDULE_DELAY_SECONDS):
        task_send(SEARCH_INDEX_STALE, countdown=SCHEDULE_DELAY_SECONDS)


def search_index_scheduled() -> int:
    """The indexing task (`chats.tasks.search.index_stale`): every stale conversation's vector. Idempotent: what is
    built is no longer stale, and rows another indexer or an ingestion holds are skipped until the next run. It
    lets the burst's key go as it starts, so that what is ingested while it runs sends the next task."""
    cache.delete(SCHEDULED_KEY)
    return search_index_stale()
