"""Receipts: every document sent leaves one, stored or refused, saying what became of it and why.

A receipt names its payload (the bytes received) by their SHA-256; the bytes are stored once, compressed, however
many receipts name them (`receipt_payloads_save`), so that a resent document costs a receipt row and not another
copy. `receipt_payloads_prune` removes the payloads of old receipts and keeps the receipts.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Length
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput
from chats.formats import canonical as c
from chats.models import ApiKey, IngestionReceipt, Outcome, ReceiptPayload, Source
from chats.services.audit import Actor, audit_record, audited_write
from chats.services.documents import Prepared


@dataclass(frozen=True)
class Sender:
    """Who sends a document: the source it is stored under, the key it came with, and who acts when that is not
    the source itself by its key (a command importing files)."""

    source: Source
    api_key: ApiKey | None = None
    actor: Actor = None


@dataclass(frozen=True)
class Decision:
    """What became of a document, as its receipt records it."""

    outcome: str
    conversation_id: int | None = None
    external_id: str | None = None  # the conversation's id, when the document was placed in one
    messages_added: int = 0
    warnings: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


# --- writing ----------------------------------------------------------------------------------------------------

# PostgreSQL: one statement for any number of payloads. A payload already stored is not written again (nor
# compressed data sent twice into the WAL) but locked until the transaction ends: the WHERE clause of DO UPDATE,
# false here, does not stop the conflicting row being locked. A prune deleting that payload at the same time
# therefore either waits for this transaction and then sees the receipt that names it (and keeps it), or deleted
# it first, and this statement inserts it again. With DO NOTHING, a receipt could name a payload deleted between
# the INSERT and the COMMIT. The rows go in in key order, so that two batches sharing payloads do not deadlock.
_PAYLOADS_UPSERT = (
    "INSERT INTO {table} (sha256, compressed, size_bytes) "
    "SELECT * FROM unnest(%s::bytea[], %s::bytea[], %s::integer[]) ORDER BY 1 "
    "ON CONFLICT (sha256) DO UPDATE SET sha256 = EXCLUDED.sha256 WHERE false"
)


def receipt_payloads_save(contents: Iterable[bytes]) -> None:
    """Store each distinct content once, in one statement however many there are (a batch's, or one receipt's);
    one already stored is left as it is. Call it in the transaction that writes the receipts naming them."""
    payloads = {payload.sha256: payload for payload in map(ReceiptPayload.of, contents)}
    if not payloads:
        return
    if connection.vendor != "postgresql":
        # SQLite serialises writers: nothing can delete a payload between this and the receipt.
        ReceiptPayload.objects.bulk_create(payloads.values(), ignore_conflicts=True)
        return
    rows = sorted(payloads.values(), key=lambda payload: payload.sha256)
    with connection.cursor() as cursor:
        cursor.execute(
            _PAYLOADS_UPSERT.format(table=connection.ops.quote_name(ReceiptPayload._meta.db_table)),
            [[bytes.fromhex(p.sha256) for p in rows], [p.compressed for p in rows], [p.size_bytes for p in rows]],
        )


def receipt_values(sender: Sender, prepared: Prepared, decision: Decision) -> dict[str, Any]:
    """The columns of a document's receipt (both writers); its payload is saved by `receipt_payloads_save`."""
    return {
        "source_id": sender.source.pk,
        "api_key_id": sender.api_key.pk if sender.api_key else None,
        "conversation_id": decision.conversation_id,
        "external_id": decision.external_id if decision.external_id is not None else prepared.external_id or "",
        # A format the client named that is not one: kept as far as the column holds (the errors say which).
        "input_format": prepared.format[:20],
        "outcome": decision.outcome,
        "payload_id": prepared.digest,
        "payload_sha256": prepared.digest,
        "size_bytes": prepared.size_bytes,
        "messages_added": decision.messages_added,
        "warnings": decision.warnings,
        "errors": decision.errors,
    }


def receipt_create(sender: Sender, prepared: Prepared, decision: Decision) -> IngestionReceipt:
    """A document's receipt: created, or, when it was stored `queued` before (`prepared.queued`), completed."""
    receipt_payloads_save([prepared.content])
    values = receipt_values(sender, prepared, decision)
    if prepared.queued is not None:
        return receipts_complete([(prepared.queued, values)])[0]
    return IngestionReceipt.objects.create(**values)


# What a queued receipt does not know yet, by column and field; the rest (source, key, payload) it was given when
# it was stored.
_DECIDED = {
    "conversation_id": "conversation",
    **{name: name for name in ("external_id", "input_format", "outcome", "messages_added", "warnings", "errors")},
}


@contextlib.contextmanager
def receipts_queued_again_on_error(receipts: Iterable[IngestionReceipt]) -> Iterator[None]:
    """A block that completes queued receipts (`receipts_complete`) in a transaction that may then fail: when it
    raises, the receipts' instances are `queued` again, as their rolled-back rows are, so that each document can
    be stored on its own after it (the bulk writer's fallback)."""
    saved = [(receipt, {column: getattr(receipt, column) for column in _DECIDED}) for receipt in receipts]
    try:
        yield
    except BaseException:
        for receipt, values in saved:
            for column, value in values.items():
                setattr(receipt, column, value)
        raise


def receipts_complete(completed: Sequence[tuple[IngestionReceipt, dict[str, Any]]]) -> list[IngestionReceipt]:
    """Give queued receipts their outcome: `receipt_values` of each, written in one statement per batch of rows.
    The caller holds their rows locked (`queued_receipts_ingest`), in the transaction that stores the documents."""
    receipts = []
    for receipt, values in completed:
        assert receipt.outcome == Outcome.QUEUED and receipt.payload_sha256 == values["payload_sha256"]
        for column in _DECIDED:
            setattr(receipt, column, values[column])
        receipts.append(receipt)
    IngestionReceipt.objects.bulk_update(receipts, list(_DECIDED.values()), batch_size=500)
    return receipts


def receipt_reject_raw(
    *, source: Source, api_key: ApiKey | None, body: bytes, errors: Sequence[c.Issue]
) -> IngestionReceipt:
    """A receipt for a body that could not even be decoded: its bytes are kept as they came (PostgreSQL's bytea
    holds any byte, NUL included)."""
    receipt_payloads_save([body])
    digest = hashlib.sha256(body).hexdigest()
    return IngestionReceipt.objects.create(
        source=source,
        api_key=api_key,
        outcome=Outcome.REJECTED,
        payload_id=digest,
        payload_sha256=digest,
        size_bytes=len(body),
        errors=[e.as_dict() for e in errors],
    )


# --- retention --------------------------------------------------------------------------------------------------

# Receipts handled per step of a prune: its memory is this many (id, time, hash) triples, whatever the table holds.
PRUNE_BATCH = 2000


@dataclass(frozen=True)
class PruneResult:
    cutoff: datetime  # receipts created before it lost (or would lose) their payload
    receipts: int  # receipts whose payload was removed
    payloads: int  # payload rows deleted: those no other receipt names
    payload_bytes: int  # their size as received
    stored_bytes: int  # their size as stored (compressed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff.isoformat(),
            "receipts": self.receipts,
            "payloads_deleted": self.payloads,
            "payload_bytes_deleted": self.payload_bytes,
            "stored_bytes_deleted": self.stored_bytes,
        }


@audited_write
def receipt_payloads_prune(
    *,
    older_than_days: int,
    actor: Actor,
    receipts: QuerySet[IngestionReceipt] | None = None,
    dry_run: bool = False,
) -> PruneResult:
    """Remove the payloads of receipts created more than `older_than_days` days ago (of `receipts` only, when
    given: the admin's selection). The receipts stay, with their hash, size, outcome, warnings and errors; a
    payload row is deleted only when no receipt names it any more (a newer receipt of the same bytes keeps it).

    Set-based, in steps of PRUNE_BATCH receipts oldest first (an UPDATE of the step's receipts, then a DELETE of
    the payloads they alone named), so that memory does not grow with the table; in one transaction, with one
    audit event. `dry_run`: count what would go, change nothing, record nothing.
    """
    if older_than_days < 0:
        raise InvalidInput("the number of days cannot be negative")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    # A queued receipt's payload is its document's only copy until a worker has applied it.
    candidates = IngestionReceipt.objects.filter(created_at__lt=cutoff, payload__isnull=False).exclude(
        outcome=Outcome.QUEUED
    )
    if receipts is not None:
        candidates = candidates.filter(pk__in=receipts.values("pk"))
    if dry_run:
        return _prune_preview(candidates, cutoff, receipts)

    total = {"receipts": 0, "payloads": 0, "payload_bytes": 0, "stored_bytes": 0}
    since: datetime | None = None
    while True:
        # From the last step's time on, not from the start: the receipts before it hold no payload any more, and
        # the index would still have to step over them.
        page = candidates if since is None else candidates.filter(created_at__gte=since)
        batch = list(page.order_by("created_at").values_list("pk", "created_at", "payload_id")[:PRUNE_BATCH])
        if not batch:
            break
        IngestionReceipt.objects.filter(pk__in=[pk for pk, _, _ in batch]).update(payload=None)
        deleted = _delete_unnamed_payloads(sorted({sha for _, _, sha in batch}))
        total["receipts"] += len(batch)
        total["payloads"] += len(deleted)
        total["payload_bytes"] += sum(size for size, _ in deleted)
        total["stored_bytes"] += sum(stored for _, stored in deleted)
        since = batch[-1][1]
    result = PruneResult(cutoff=cutoff, **total)
    if result.receipts:
        audit_record(
            actor=actor,
            action=AuditAction.RECEIPT_PAYLOADS_PRUNED,
            target_type="receipts",
            target_id="selected" if receipts is not None else "all",
            after={"older_than_days": older_than_days, **result.as_dict()},
        )
    return result


def _delete_unnamed_payloads(shas: list[str]) -> list[tuple[int, int]]:
    """Delete those of these payloads that no receipt names; (size, stored size) of each deleted."""
    payloads = ReceiptPayload.objects.filter(sha256__in=shas)
    if connection.vendor == "postgresql":
        # Wait for the ingestions that hold one of them (see _PAYLOADS_UPSERT), so that the DELETE below, which
        # reads what has committed when it starts, sees their receipts; later ones wait for this transaction.
        list(payloads.order_by("sha256").select_for_update().values_list("sha256", flat=True))
    qn = connection.ops.quote_name
    payload_table, receipt_table = qn(ReceiptPayload._meta.db_table), qn(IngestionReceipt._meta.db_table)
    placeholders = ", ".join(["%s"] * len(shas))
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {payload_table} WHERE sha256 IN ({placeholders}) AND NOT EXISTS "
            f"(SELECT 1 FROM {receipt_table} AS r WHERE r.payload_id = {payload_table}.sha256) "
            "RETURNING size_bytes, length(compressed)",
            [bytes.fromhex(sha) for sha in shas],  # as the column holds them (see Sha256Field)
        )
        return [(int(size), int(stored)) for size, stored in cursor.fetchall()]


def _prune_preview(
    candidates: QuerySet[IngestionReceipt], cutoff: datetime, selection: QuerySet[IngestionReceipt] | None
) -> PruneResult:
    """What a prune would remove, counted in two queries."""
    kept = Q(created_at__gte=cutoff)
    if selection is not None:
        kept |= ~Q(pk__in=selection.values("pk"))
    named_by_a_kept_receipt = IngestionReceipt.objects.filter(kept, payload=OuterRef("pk"))
    freed = (
        ReceiptPayload.objects.filter(Exists(candidates.filter(payload=OuterRef("pk"))))
        .exclude(Exists(named_by_a_kept_receipt))
        .aggregate(count=Count("pk"), size=Sum("size_bytes"), stored=Sum(Length("compressed")))
    )
    return PruneResult(
        cutoff=cutoff,
        receipts=candidates.count(),
        payloads=freed["count"],
        payload_bytes=freed["size"] or 0,
        stored_bytes=freed["stored"] or 0,
    )
