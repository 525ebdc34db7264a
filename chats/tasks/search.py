"""Building search vectors apart from ingestion (chats.services.search)."""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache
from django.db import InterfaceError, OperationalError

from chats.services.search import SCHEDULED_KEY, search_index_stale


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, retry_backoff_max=60, max_retries=10)
def index_stale() -> int:
    """Every stale conversation's vector. Idempotent: what is built is no longer stale, and rows another indexer
    or an ingestion holds are skipped until the next run."""
    cache.delete(SCHEDULED_KEY)
    return search_index_stale()
