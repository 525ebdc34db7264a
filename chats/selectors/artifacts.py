"""The artifact list (protocols, records, discussions, ...): every id seen, injected or only listed by an injection
context (what was permitted), with its figures.

The list is one grouped query over both tables (a UNION ALL of every sighting, GROUP BY kind and id), plus one
grouped query each for the scores and labels of the feedback on a page's artifacts: a page costs the same
whatever its number and however much data there is. Nothing is counted one row at a time. One id's versions are in
``chats.selectors.artifact_versions``, the conversations it was injected into in ``chats.selectors.artifact_uses``,
the list's NDJSON export in ``chats.selectors.artifact_export``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Case, Count, DateTimeField, F, Q, QuerySet, Value, When
from django.db.models.expressions import Combinable
from django.db.models.functions import Cast, Coalesce
from django.utils.dateparse import parse_datetime

from chats.models import (
    ArtifactKind,
    ContextArtifactId,
    ContextIdState,
    Feedback,
    FeedbackLabel,
    InjectedArtifact,
    Score,
    Source,
    Verdict,
)

# Pages of the artifact list are bounded: a page costs the same whatever its number, and there are at most this many.
ARTIFACT_PAGE_SIZE = 50
MAX_ARTIFACT_PAGE = 200
NOT_PERMITTED = (Verdict.KIND_NOT_ENABLED, Verdict.NOT_LISTED)

# The list's orders: ORDER BY of the grouped query (whitelisted SQL, never built from input), then (kind, id).
_LAST = "MAX(seen.a_at)"
_FIRST = "MIN(seen.a_at)"
ARTIFACT_SORTS: dict[str, tuple[str, str]] = {
    "last_injected": ("Last injected, newest first", f"CASE WHEN {_LAST} IS NULL THEN 1 ELSE 0 END, {_LAST} DESC"),
    "first_injected": ("First injected, oldest first", f"CASE WHEN {_FIRST} IS NULL THEN 1 ELSE 0 END, {_FIRST}"),
    "last_received": (
        "Last received, newest first",
        "CASE WHEN MAX(seen.a_received) IS NULL THEN 1 ELSE 0 END, MAX(seen.a_received) DESC",
    ),
    "conversations": ("Most conversations", "injected_conversations DESC"),
    "permitted_only": ("Most only permitted", "permitted_only DESC"),
    "violations": ("Most violations", "violations DESC"),
    "artifact_id": ("Artifact id", "seen.a_id"),
}
DEFAULT_ARTIFACT_SORT = "last_injected"


@dataclass(frozen=True, slots=True)
class ScoreCounts:
    up: int = 0
    neutral: int = 0
    down: int = 0

    @property
    def total(self) -> int:
        return self.up + self.neutral + self.down


def _iso(moment: dt.datetime | None) -> str | None:
    """As the API writes times (DRF's DateTimeField): ISO 8601 in UTC, with "Z"."""
    if moment is None:
        return None
    text = moment.astimezone(dt.UTC).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


@dataclass(frozen=True, slots=True)
class ArtifactSummary:
    """One artifact (kind and id) across the conversations in scope."""

    kind: str
    artifact_id: str
    injected_conversations: int  # conversations it was injected into (requested, resolved, or both)
    permitted_only: int  # conversations whose injection context lists it but that did not inject it
    violations: int  # injections whose verdict is not "permitted" (kind not enabled, not listed)
    first_injected_at: dt.datetime | None  # the conversations' own times (None when no input gave one)
    last_injected_at: dt.datetime | None
    last_received_at: dt.datetime | None  # when the newest of its injections was received
    scores: ScoreCounts  # the feedback on the conversations that injected it
    labels: dict[str, int]  # feedback label name -> how many times, on those conversations

    def as_json(self) -> dict[str, Any]:
        """One line of the NDJSON export, and the shape of the API's items."""
        return {
            "kind": self.kind,
            "artifact_id": self.artifact_id,
            "injected_conversations": self.injected_conversations,
            "permitted_only": self.permitted_only,
            "violations": self.violations,
            "first_injected_at": _iso(self.first_injected_at),
            "last_injected_at": _iso(self.last_injected_at),
            "last_received_at": _iso(self.last_received_at),
            "scores": {"up": self.scores.up, "neutral": self.scores.neutral, "down": self.scores.down},
            "labels": self.labels,
        }


@dataclass(frozen=True, slots=True)
class ArtifactFilters:
    """What the list, its export and the dashboard select on. ``source`` is the caller's scope as well (a
    source's key sees only its own source)."""

    source: Source | None = None
    kind: str | None = None
    artifact_id: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactPage:
    artifacts: list[ArtifactSummary]
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def _given_at() -> Coalesce:
    # When the model was given the artifact, in the conversation's own time: its message's time when the input gave
    # one, else the conversation's start. Never when the document was received: an input that gives no time has
    # none here (NULL), and the list shows the received time in a column of its own (_received_at).
    return Coalesce("message__sent_at", "conversation__started_at")


def _received_at() -> Coalesce:
    # When the injection was received and stored: its message's row, else its conversation's.
    return Coalesce("message__created_at", "conversation__created_at")


def artifact_where(filters: ArtifactFilters, after: tuple[str, str] | None = None) -> Q:
    where = Q()
    if filters.source is not None:
        where &= Q(conversation__source=filters.source)
    if filters.kind:
        where &= Q(kind=filters.kind)
    if filters.artifact_id is not None:
        where &= Q(artifact_id=filters.artifact_id)
    if after is not None:
        kind, artifact_id = after
        where &= Q(kind__gt=kind) | Q(kind=kind, artifact_id__gt=artifact_id)
    return where


_SEEN_COLUMNS = ("a_kind", "a_id", "a_conv", "a_injected", "a_unused", "a_violation", "a_at", "a_received")


def _sightings(
    rows: QuerySet[Any],
    *,
    injected: Combinable,
    unused: Combinable,
    violation: Combinable,
    at: Combinable | None = None,
    received: Combinable | None = None,
) -> QuerySet[Any]:
    """`rows` (injections, or listed ids) as sightings in the _SEEN_COLUMNS: the artifact and its conversation, and
    the given flags and times (no time: NULL)."""
    sightings: QuerySet[Any] = (
        rows.annotate(
            a_kind=F("kind"),
            a_id=F("artifact_id"),
            a_conv=F("conversation_id"),
            a_injected=injected,
            a_unused=unused,
            a_violation=violation,
            a_at=Cast(Value(None), DateTimeField()) if at is None else at,
            a_received=Cast(Value(None), DateTimeField()) if received is None else received,
        )
        .order_by()
        .values(*_SEEN_COLUMNS)
    )
    return sightings


def _seen(filters: ArtifactFilters, after: tuple[str, str] | None = None) -> tuple[str, tuple[Any, ...]]:
    """SQL (and its parameters) of every sighting of an artifact in scope: one row per injection and one per id
    a context lists, in the same columns, so that one GROUP BY counts them all."""
    where = artifact_where(filters, after)
    injected = _sightings(
        InjectedArtifact.objects.filter(where),
        injected=Value(1),
        unused=Value(0),
        violation=Case(When(verdict__in=NOT_PERMITTED, then=Value(1)), default=Value(0)),
        at=_given_at(),
        received=_received_at(),
    )
    listed = _sightings(
        ContextArtifactId.objects.filter(where),
        injected=Value(0),
        unused=Case(When(state=ContextIdState.UNUSED, then=Value(1)), default=Value(0)),
        violation=Value(0),
    )
    sql, params = injected.union(listed, all=True).query.sql_with_params()
    return sql, tuple(params)


_GROUPED = """
SELECT seen.a_kind, seen.a_id,
       COUNT(DISTINCT CASE WHEN seen.a_injected = 1 THEN seen.a_conv END) AS injected_conversations,
       COUNT(DISTINCT CASE WHEN seen.a_unused = 1 THEN seen.a_conv END) AS permitted_only,
       SUM(seen.a_violation) AS violations,
       {first} AS first_at,
       {last} AS last_at,
       MAX(seen.a_received) AS received_at
FROM ({seen}) seen
GROUP BY seen.a_kind, seen.a_id
ORDER BY {order}, seen.a_kind, seen.a_id
LIMIT %s OFFSET %s
"""


def _as_datetime(value: object) -> dt.datetime | None:
    """A MIN/MAX of a timestamp over a subquery: a datetime on PostgreSQL, text on SQLite (stored in UTC)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    parsed = parse_datetime(str(value))
    if parsed is None:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _grouped(
    filters: ArtifactFilters, *, order: str, limit: int, offset: int = 0, after: tuple[str, str] | None = None
) -> list[tuple[Any, ...]]:
    seen, params = _seen(filters, after)
    sql = _GROUPED.format(first=_FIRST, last=_LAST, seen=seen, order=order)
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, limit, offset))
        return list(cursor.fetchall())


def _summaries(rows: list[tuple[Any, ...]], filters: ArtifactFilters) -> list[ArtifactSummary]:
    """The grouped rows with the feedback on their conversations: two grouped queries whatever the rows."""
    if not rows:
        return []
    keys = {(row[0], row[1]) for row in rows}
    ids = sorted({row[1] for row in rows})
    scope = Q(conversation__artifacts__artifact_id__in=ids)
    if filters.source is not None:
        scope &= Q(conversation__source=filters.source)
    scores: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for score_row in (
        Feedback.objects.filter(scope, score__isnull=False)
        .values_list("conversation__artifacts__kind", "conversation__artifacts__artifact_id", "score")
        .annotate(n=Count("id", distinct=True))
        .order_by()
    ):
        kind, artifact_id, score, n = score_row
        scores[kind, artifact_id][score] = n
    labels: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for label_row in (
        FeedbackLabel.objects.filter(scope)
        .values_list("conversation__artifacts__kind", "conversation__artifacts__artifact_id", "label__name")
        .annotate(n=Count("id", distinct=True))
        .order_by("label__name")
    ):
        kind, artifact_id, name, n = label_row
        if (kind, artifact_id) in keys:
            labels[kind, artifact_id][name] = n
    return [
        ArtifactSummary(
            kind=kind,
            artifact_id=artifact_id,
            injected_conversations=injected,
            permitted_only=permitted_only,
            violations=int(violations or 0),
            first_injected_at=_as_datetime(first_at),
            last_injected_at=_as_datetime(last_at),
            last_received_at=_as_datetime(received_at),
            scores=ScoreCounts(
                up=scores[kind, artifact_id].get(Score.UP, 0),
                neutral=scores[kind, artifact_id].get(Score.NEUTRAL, 0),
                down=scores[kind, artifact_id].get(Score.DOWN, 0),
            ),
            labels=labels.get((kind, artifact_id), {}),
        )
        for kind, artifact_id, injected, permitted_only, violations, first_at, last_at, received_at in rows
    ]


def artifact_page(
    filters: ArtifactFilters, *, sort: str = DEFAULT_ARTIFACT_SORT, number: int = 1, size: int = ARTIFACT_PAGE_SIZE
) -> ArtifactPage:
    """One page of the artifact list: three queries (the grouped figures, the scores, the labels) whatever the
    page and however many conversations, injections and ids there are."""
    number = min(max(number, 1), MAX_ARTIFACT_PAGE)
    order = ARTIFACT_SORTS.get(sort, ARTIFACT_SORTS[DEFAULT_ARTIFACT_SORT])[1]
    rows = _grouped(filters, order=order, limit=size + 1, offset=(number - 1) * size)
    has_next = len(rows) > size and number < MAX_ARTIFACT_PAGE
    return ArtifactPage(artifacts=_summaries(rows[:size], filters), number=number, has_next=has_next)


def artifact_summaries_of(filters: ArtifactFilters) -> list[ArtifactSummary]:
    """The figures of one artifact id (``filters.artifact_id``), one per kind it was seen as."""
    rows = _grouped(filters, order="seen.a_kind", limit=len(ArtifactKind.values))
    return _summaries(rows, filters)


def artifact_count(filters: ArtifactFilters) -> int:
    seen, params = _seen(filters)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM ({seen}) seen GROUP BY seen.a_kind, seen.a_id) ids", params
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def iter_artifacts(filters: ArtifactFilters, *, batch: int = 500) -> Iterator[ArtifactSummary]:
    """Every artifact in scope, by (kind, id), batch by batch (three queries per batch): for the NDJSON export.
    Batches follow (kind, id) by keyset, so an artifact seen for the first time during the stream is not repeated."""
    after: tuple[str, str] | None = None
    while True:
        rows = _grouped(filters, order="seen.a_kind, seen.a_id", limit=batch, after=after)
        yield from _summaries(rows, filters)
        if len(rows) < batch:
            return
        after = (rows[-1][0], rows[-1][1])
