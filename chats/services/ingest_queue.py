"""Asynchronous bulk ingestion: documents stored first as bytes with a `queued` receipt, applied later by a worker.

`receipts_enqueue` (the request) stores each document's bytes (`receipt_payloads_save`) and a `queued` receipt
naming them, in one transaction, and only once that has committed sends the task (`chats.tasks.ingest`) with the
receipts' ids: a document whose 202 was answered is in the database, whatever becomes of the broker's message.

`queued_receipts_ingest` (the worker) applies them through the one bulk ingestion entry point,
`conversations_ingest_bulk`, exactly as a synchronous bulk request does: the same planner, the same writers, the
same receipt values and audit events; the writers complete each queued receipt where the synchronous path creates
one. It works in chunks of QUEUED_CHUNK receipts, each in one transaction that first locks the chunk's receipts
still `queued` and then stores their documents: a worker killed mid-chunk leaves neither the conversations nor
the outcomes of that chunk, and the task delivered again (or resent by `queued_receipts_requeue`) skips the
receipts that are no longer queued. Two workers given the same receipts at once take turns on the lock, and the
second finds them done.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chats import jsonio
from chats.models import ApiKey, IngestionReceipt, Outcome, ReceiptPayload, Source
from chats.services.audit import audited_write
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.receipts import receipt_payloads_save

logger = logging.getLogger(__name__)

# Receipts applied per transaction by a worker: how much a killed worker leaves to do again, and how long the
# conversations of one chunk stay locked.
QUEUED_CHUNK = 100


def receipts_enqueue(
    *, source: Source, api_key: ApiKey | None, format: str | None, contents: Sequence[bytes]
) -> list[IngestionReceipt]:
    """Store each document's bytes with a `queued` receipt, in one transaction; once it has committed, send the
    task that applies them. The receipts, in the order of `contents`."""
    with transaction.atomic():
        receipt_payloads_save(contents)
        receipts = []
        for content in contents:
            payload = ReceiptPayload.of(content)
            receipts.append(
                IngestionReceipt(
                    source=source,
                    api_key=api_key,
                    # The format the client named, which the worker parses with; the parsed one replaces it.
                    input_format=(format or "")[:20],
                    outcome=Outcome.QUEUED,
                    payload_id=payload.sha256,
                    payload_sha256=payload.sha256,
                    size_bytes=payload.size_bytes,
                )
            )
        IngestionReceipt.objects.bulk_create(receipts)
        ids = [receipt.pk for receipt in receipts]
        if ids:
            # robust: a broker that cannot be reached does not undo the answer; the documents are stored, and
            # `requeue_ingest` sends them again.
            transaction.on_commit(lambda: queued_send(ids), robust=True)
    return receipts


def queued_send(receipt_ids: Sequence[int]) -> None:
    """Send the task that applies these queued receipts (run inline when no broker is configured)."""
    from chats.tasks.ingest import ingest_queued  # the tasks module imports this one

    ingest_queued.delay(list(receipt_ids))


def queued_receipts_ingest(*, receipt_ids: Sequence[int]) -> int:
    """Apply the documents of these receipts that are still queued, in chunks of QUEUED_CHUNK, one transaction
    each; the others are skipped. How many were applied."""
    ids = sorted(set(receipt_ids))
    return sum(_apply_chunk(ids[start : start + QUEUED_CHUNK]) for start in range(0, len(ids), QUEUED_CHUNK))


@audited_write
def _apply_chunk(ids: Sequence[int]) -> int:
    # Locked to the end of the transaction that stores their documents; a second worker waits here, and then
    # reads (PostgreSQL checks the condition again on the committed row) that they are no longer queued.
    receipts = list(
        IngestionReceipt.objects.filter(pk__in=ids, outcome=Outcome.QUEUED)
        .select_for_update(of=("self",))
        .select_related("source", "api_key", "payload")
        .order_by("pk")
    )
    # In the order they were received; a run of one source, key and format is one bulk call (a request's).
    for (source, api_key, format), run in itertools.groupby(
        receipts, key=lambda receipt: (receipt.source, receipt.api_key, receipt.input_format)
    ):
        group = list(run)
        contents = [_content(receipt) for receipt in group]
        conversations_ingest_bulk(
            source=source,
            documents=[_decode(content) for content in contents],
            format=format or None,
            api_key=api_key,
            contents=contents,
            queued=group,
        )
    return len(receipts)


def _content(receipt: IngestionReceipt) -> bytes:
    # A queued receipt's payload is never pruned (receipt_payloads_prune leaves them).
    assert receipt.payload is not None
    return receipt.payload.content


def _decode(content: bytes) -> object:
    """The document, decoded as the request decoded it (a UTF-16 array's document was kept as its canonical
    JSON, which holds an unpaired surrogate as such)."""
    try:
        return jsonio.loads(content)
    except UnicodeDecodeError:
        return jsonio.loads(content.decode("utf-8", errors="surrogatepass"))


def queued_receipts_requeue(*, older_than: timedelta) -> int:
    """Send the task again for every receipt still queued that was received more than `older_than` ago (its
    message lost with a broker, or its task failed); how many. Safe to run at any time: the task skips what is
    done, and a receipt that two tasks name is applied once."""
    cutoff = timezone.now() - older_than
    ids = list(
        IngestionReceipt.objects.filter(outcome=Outcome.QUEUED, created_at__lt=cutoff)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for batch in itertools.batched(ids, settings.MASTERBRAIN_MAX_BULK_ITEMS):
        queued_send(batch)
    if ids:
        logger.info("requeue_ingest: sent %d receipts queued since before %s again", len(ids), cutoff.isoformat())
    return len(ids)
