"""Asynchronous bulk ingestion: apply the documents of receipts stored `queued` (see chats.services.ingest_queue).

The message names receipt ids only; the documents are in the database. A transient database error (the server
restarting, a connection dropped) retries the task with exponential backoff; the chunks it had committed are not
queued any more and are skipped.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from chats.services.ingest_queue import queued_receipts_ingest


@shared_task(
    name="chats.ingest_queued",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,  # 2 s, 4 s, 8 s, ... with jitter
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=10,  # then requeue_ingest sends it again
)
def ingest_queued(receipt_ids: list[int]) -> int:
    """Apply the queued receipts among `receipt_ids`; how many were applied (0: all done already)."""
    return queued_receipts_ingest(receipt_ids=receipt_ids)
