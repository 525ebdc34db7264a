"""Building search vectors apart from ingestion (`chats.services.search.search_index_scheduled`)."""

from __future__ import annotations

from celery import shared_task

from chats.transient import TRANSIENT_ERRORS


@shared_task(autoretry_for=TRANSIENT_ERRORS, retry_backoff=True, retry_backoff_max=60, max_retries=10)
def index_stale() -> int:
    from chats.services.search import search_index_scheduled

    return search_index_scheduled()
