"""The asynchronous ingest queue's health, per source: how many receipts are still `queued`, and since when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from chats.models import IngestionReceipt, Outcome, Source


@dataclass(frozen=True)
class SourceQueue:
    """One source's queued receipts: how many, and the oldest one's reception and age."""

    source: str
    queued: int
    oldest_queued_at: datetime

    def oldest_age_seconds(self, now: datetime) -> float:
        return max(0.0, (now - self.oldest_queued_at).total_seconds())


def ingest_queue_by_source() -> list[SourceQueue]:
    """Every source with a receipt still queued, by name: one query over the queued receipts only (the partial
    index `receipt_queued_idx`), however many receipts were ever stored."""
    rows = (
        IngestionReceipt.objects.filter(outcome=Outcome.QUEUED)
        .values("source__name")
        .annotate(queued=Count("id"), oldest=Min("created_at"))
        .order_by("source__name")
    )
    return [SourceQueue(row["source__name"], row["queued"], row["oldest"]) for row in rows]


def with_queue_health(sources: QuerySet[Source]) -> QuerySet[Source]:
    """Sources annotated with `queued` (receipts still queued) and `oldest_queued_at` (None when none is): two
    subqueries over the queued receipts, in the sources' own query."""
    queued = IngestionReceipt.objects.filter(source=OuterRef("pk"), outcome=Outcome.QUEUED)
    count = queued.order_by().values("source").annotate(n=Count("id")).values("n")
    oldest = queued.order_by("created_at").values("created_at")[:1]
    return sources.annotate(queued=Coalesce(Subquery(count), 0), oldest_queued_at=Subquery(oldest))


def queue_age_seconds(oldest: datetime | None, now: datetime | None = None) -> float | None:
    """How long the oldest queued receipt has waited, in seconds; None when nothing is queued."""
    if oldest is None:
        return None
    return max(0.0, ((now or timezone.now()) - oldest).total_seconds())
