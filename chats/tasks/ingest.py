"""Asynchronous bulk ingestion: apply the documents of receipts stored `queued` (`chats.services.ingest_queue`).

The message names receipt ids only; the documents are in the database. A transient database error
(`chats.transient.TRANSIENT_ERRORS`) retries the task with exponential backoff and full jitter, up to MAX_RETRIES
times; once they are spent, `queued_receipts_exhausted` rejects what is still queued with the reason.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval

from chats.transient import TRANSIENT_ERRORS

MAX_RETRIES = 10
BACKOFF_FACTOR = 2  # seconds: 2, 4, 8, ... with full jitter
BACKOFF_MAX = 300


@shared_task(bind=True, name="chats.ingest_queued", max_retries=MAX_RETRIES)
def ingest_queued(self: Any, receipt_ids: list[int]) -> int:
    """Apply the queued receipts among `receipt_ids`; how many were applied (0: all done already)."""
    from chats.services.ingest_queue import queued_receipts_exhausted, queued_receipts_ingest

    try:
        return queued_receipts_ingest(receipt_ids=receipt_ids)
    except TRANSIENT_ERRORS as error:
        retries = self.request.retries
        if retries >= self.max_retries:
            return queued_receipts_exhausted(receipt_ids=receipt_ids, attempts=retries + 1, error=error)
        countdown = get_exponential_backoff_interval(BACKOFF_FACTOR, retries, BACKOFF_MAX, full_jitter=True)
        raise self.retry(exc=error, countdown=countdown) from error
