"""The search index: conversations' search vectors, built apart from ingestion as a search engine's indexer is."""

from __future__ import annotations

from django.db import connection, transaction

from chats.models import SEARCH_DOCUMENT_SQL, SEARCH_TEXT_LIMIT, Conversation


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
