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

No receipt stays queued forever. A document that fails for a reason that cannot heal (a value the database
refuses, a trigger's error) is rejected alone, in its own savepoint, with the reason; the chunk's other documents
are stored. A transient failure (the database restarting, a connection dropped) rolls the chunk back and the task
retries with backoff, up to a bound; then `queued_receipts_fail` gives what is still queued a final `rejected`
outcome saying so (`chats.tasks.ingest`).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chats import strict_json
from chats.models import ApiKey, IngestionReceipt, Outcome, ReceiptPayload, Source
from chats.services.audit import audited_write
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.dispatch import INGEST_QUEUED, task_send
from chats.services.ingestion import failure_issue
from chats.services.receipts import receipt_payloads_save
from chats.transient import TRANSIENT_ERRORS

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
    task_send(INGEST_QUEUED, list(receipt_ids))


def queued_receipts_ingest(*, receipt_ids: Sequence[int]) -> int:
    """Apply the documents of these receipts that are still queued, in chunks of QUEUED_CHUNK, one transaction
    each; the others are skipped. How many were applied (stored or rejected).

    Each document is stored in its own savepoint when its batch fails (see `conversations_ingest_bulk`), and one the
    database refuses is rejected alone. Should a chunk fail all the same (an error outside any document's writing),
    its receipts are applied one by one, each in its own transaction, and one that fails alone is rejected with the
    reason (`queued_receipts_fail`): a poison document never keeps the others, or itself, queued. A transient
    database error (TRANSIENT_ERRORS) is raised instead, for the task to retry."""
    ids = sorted(set(receipt_ids))
    applied = 0
    for start in range(0, len(ids), QUEUED_CHUNK):
        chunk = ids[start : start + QUEUED_CHUNK]
        try:
            applied += _apply_chunk(chunk)
        except TRANSIENT_ERRORS:
            raise
        except Exception:
            logger.exception("ingest worker: a chunk of %d receipts failed; applying them one by one", len(chunk))
            applied += sum(_apply_alone(receipt_id) for receipt_id in chunk)
    return applied


def _apply_alone(receipt_id: int) -> int:
    try:
        return _apply_chunk([receipt_id])
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:
        logger.exception("ingest worker: receipt %d cannot be applied; it is rejected", receipt_id)
        return queued_receipts_fail(receipt_ids=[receipt_id], errors=[failure_issue(error).as_dict()])


@audited_write
def queued_receipts_fail(*, receipt_ids: Sequence[int], errors: list[dict[str, str]]) -> int:
    """Give the receipts among these that are still queued a final outcome, `rejected` with `errors` (a document
    that cannot be applied, or the worker's retries exhausted): nothing of them was stored, and their payloads
    keep the bytes to send again. How many."""
    return IngestionReceipt.objects.filter(pk__in=receipt_ids, outcome=Outcome.QUEUED).update(
        outcome=Outcome.REJECTED, errors=errors
    )


def queued_receipts_exhausted(*, receipt_ids: Sequence[int], attempts: int, error: BaseException) -> int:
    """The task's retries are spent (`chats.tasks.ingest`): what is still queued among these receipts is rejected,
    saying that the database was unavailable through `attempts` attempts and that the document is to be sent again."""
    message = (
        f"the database was unavailable through {attempts} attempts ({type(error).__name__}); nothing of "
        "the document was stored: send it again"
    )
    return queued_receipts_fail(receipt_ids=receipt_ids, errors=[{"path": "", "message": message}])


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
        return strict_json.loads(content)
    except UnicodeDecodeError:
        return strict_json.loads(content.decode("utf-8", errors="surrogatepass"))


def queued_receipts_requeue(
    *, older_than: timedelta, source: Source | None = None, receipt_uuids: Sequence[uuid.UUID] = ()
) -> int:
    """Send the task again for every receipt still queued that was received more than `older_than` ago (its
    message lost with a broker, or its task failed); how many. `source`: only that source's; `receipt_uuids`: only
    these receipts, however recent. Each task names one source's receipts, so that one source's document never
    waits on another's. Safe to run at any time: the task skips what is done, and a receipt that two tasks name is
    applied once."""
    queued = IngestionReceipt.objects.filter(outcome=Outcome.QUEUED)
    if receipt_uuids:
        queued = queued.filter(uuid__in=receipt_uuids)
    else:
        queued = queued.filter(created_at__lt=timezone.now() - older_than)
    if source is not None:
        queued = queued.filter(source=source)
    rows = list(queued.order_by("source_id", "pk").values_list("source_id", "pk"))
    for _, run in itertools.groupby(rows, key=lambda row: row[0]):
        for batch in itertools.batched((pk for _, pk in run), settings.MASTERBRAIN_MAX_BULK_ITEMS):
            queued_send(batch)
    if rows:
        logger.info("requeue_ingest: sent %d queued receipts again", len(rows))
    return len(rows)
