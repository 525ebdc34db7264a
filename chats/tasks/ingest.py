"""Asynchronous bulk ingestion: apply the documents of receipts stored `queued` (see chats.services.ingest_queue).

The message names receipt ids only; the documents are in the database. A document that cannot be stored is
rejected alone by the service, with its reason. A transient database error (the server restarting, a connection
dropped: `TRANSIENT_ERRORS`) retries the task with exponential backoff and jitter, up to MAX_RETRIES times; the
chunks it had committed are not queued any more and are skipped. Once the retries are spent, the receipts still
queued are rejected with the reason (`queued_receipts_fail`), so that none stays `queued` unseen: their payloads
keep the bytes, to be sent again.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval

from chats.services.ingest_queue import queued_receipts_fail, queued_receipts_ingest
from chats.services.ingestion import TRANSIENT_ERRORS

MAX_RETRIES = 10
BACKOFF_FACTOR = 2  # seconds: 2, 4, 8, ... with full jitter
BACKOFF_MAX = 300


@shared_task(bind=True, name="chats.ingest_queued", max_retries=MAX_RETRIES)
def ingest_queued(self: Any, receipt_ids: list[int]) -> int:
    """Apply the queued receipts among `receipt_ids`; how many were applied (0: all done already)."""
    try:
        return queued_receipts_ingest(receipt_ids=receipt_ids)
    except TRANSIENT_ERRORS as error:
        retries = self.request.retries
        if retries >= self.max_retries:
            message = (
                f"the database was unavailable through {retries + 1} attempts ({type(error).__name__}); nothing of "
                "the document was stored: send it again"
            )
            return queued_receipts_fail(receipt_ids=receipt_ids, errors=[{"path": "", "message": message}])
        countdown = get_exponential_backoff_interval(BACKOFF_FACTOR, retries, BACKOFF_MAX, full_jitter=True)
        raise self.retry(exc=error, countdown=countdown) from error
