"""The Trends page's figures: time series over a range of days or weeks (UTC), each point a count of
conversations that the conversation list's own filters select exactly (same range, same bucket), so that every
point links to the conversations behind it.

A conversation falls in the bucket of its last activity (the list's date_from/date_to read the same column). The
conversation figures read the daily rollups (chats.models.trends, kept by chats.services.trend_rollups after every
ingestion and feedback write), two grouped queries over a few rows per day whatever the range holds; the team's
reviews (conversations reviewed per reviewer, agreement per queue) are read from the reviews themselves.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db.models import Count, F, QuerySet, Sum
from django.db.models.functions import TruncDate, TruncWeek

from chats.models import Review, ReviewState, RubricVersion, Score, TrendDay, TrendFigure, TrendTally
from chats.review.rubric_agreement import QuestionGroup, rubric_agreement

Bucket = Literal["day", "week"]
# The most series a chart draws (the busiest ones); the table says how many were left out.
TOP_SERIES = 8


@dataclass(frozen=True)
class Range:
    first: dt.date  # the first day of the first bucket
    last: dt.date  # the last day of the last bucket
    bucket: Bucket

    @property
    def starts(self) -> list[dt.date]:
        step = dt.timedelta(days=1 if self.bucket == "day" else 7)
        days, day = [], self.first
        while day <= self.last:
            days.append(day)
            day += step
        return days

    def bucket_last(self, start: dt.date) -> dt.date:
        return start if self.bucket == "day" else start + dt.timedelta(days=6)

    def bounds(self) -> tuple[dt.datetime, dt.datetime]:
        since = dt.datetime.combine(self.first, dt.time.min, tzinfo=dt.UTC)
        until = dt.datetime.combine(self.last + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
        return since, until


def aligned_range(first: dt.date, last: dt.date, bucket: Bucket) -> Range:
    """The range of whole buckets holding ``first`` to ``last``: weeks run Monday to Sunday."""
    if bucket == "week":
        first -= dt.timedelta(days=first.weekday())
        last += dt.timedelta(days=6 - last.weekday())
    return Range(first, last, bucket)


@dataclass
class Point:
    start: dt.date
    value: int  # conversations: what the point's link lists
    of: int | None = None  # for a share: the conversations it is a share of
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def share(self) -> float | None:
        return self.value / self.of if self.of else None


@dataclass
class Series:
    name: str
    filters: dict[str, str]  # the list's parameters selecting the series (the bucket's dates added per point)
    points: list[Point]

    @property
    def total(self) -> int:
        return sum(point.value for point in self.points)


@dataclass
class Figure:
    key: str
    title: str
    description: str
    series: list[Series]
    omitted: int = 0  # series beyond TOP_SERIES, not drawn
    rate: bool = False  # points are shares (value of ``of``)


def _truncated(column: str, bucket: Bucket) -> TruncDate | TruncWeek:
    return (TruncDate if bucket == "day" else TruncWeek)(column, tzinfo=dt.UTC)


def _day(value: dt.date | dt.datetime) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


def _figure(
    key: str,
    title: str,
    description: str,
    span: Range,
    counts: dict[tuple[str, dt.date], int],
    filters_of: Callable[[str], dict[str, str]],
    *,
    totals: dict[tuple[str, dt.date], int] | None = None,
    extras: dict[tuple[str, dt.date], dict[str, float]] | None = None,
) -> Figure:
    """A figure from counts by (series name, bucket start): the busiest TOP_SERIES series, every bucket listed."""
    by_name: dict[str, int] = defaultdict(int)  # a share's series ranked by what it is a share of
    for (name, _start), value in (counts if totals is None else totals).items():
        by_name[name] += value
    names = sorted(by_name, key=lambda name: (-by_name[name], name))
    series = []
    for name in names[:TOP_SERIES]:
        points = [
            Point(
                start,
                counts.get((name, start), 0),
                None if totals is None else totals.get((name, start), 0),
                (extras or {}).get((name, start), {}),
            )
            for start in span.starts
        ]
        series.append(Series(name, filters_of(name), points))
    return Figure(key, title, description, series, max(len(names) - TOP_SERIES, 0), rate=totals is not None)


def _one_filter(parameter: str, value: str) -> dict[str, str]:
    return {parameter: value}


def _key(value: str, start: dt.date | dt.datetime) -> tuple[str, dt.date]:
    return (value, _day(start))


def _rollup(model: type[TrendDay] | type[TrendTally], span: Range) -> QuerySet[Any]:
    """The rollup rows of the range's days, each with its bucket's start."""
    rows: QuerySet[Any] = model.objects.filter(day__gte=span.first, day__lte=span.last)
    annotated: QuerySet[Any] = rows.annotate(start=F("day") if span.bucket == "day" else TruncWeek("day"))
    return annotated


def volume(span: Range) -> tuple[Figure, Figure, dict[tuple[str, dt.date], int], dict[tuple[str, dt.date], int]]:
    """Conversations by source and by model per bucket, and their messages. One grouped query over the rollups."""
    by_source: dict[tuple[str, dt.date], int] = defaultdict(int)
    by_model: dict[tuple[str, dt.date], int] = defaultdict(int)
    messages_source: dict[tuple[str, dt.date], int] = defaultdict(int)
    messages_model: dict[tuple[str, dt.date], int] = defaultdict(int)
    rows = (
        _rollup(TrendDay, span)
        .values("start", "source__name", "model_name")
        .annotate(n=Sum("conversations"), messages=Sum("messages"))
        .order_by()
    )
    for row in rows:
        start = _day(row["start"])
        by_source[(row["source__name"], start)] += row["n"]
        by_model[(row["model_name"], start)] += row["n"]
        messages_source[(row["source__name"], start)] += row["messages"] or 0
        messages_model[(row["model_name"], start)] += row["messages"] or 0
    sources = _figure(
        "source",
        "Conversations by source",
        "Conversations per bucket of last activity, one series per source.",
        span,
        by_source,
        lambda name: {"source": name},
        extras={key: {"messages": value} for key, value in messages_source.items()},
    )
    models = _figure(
        "model",
        "Conversations by model",
        "Conversations per bucket of last activity, one series per model.",
        span,
        {key: value for key, value in by_model.items() if key[0]},
        lambda name: {"model": name},
        extras={key: {"messages": value} for key, value in messages_model.items()},
    )
    return sources, models, by_source, by_model


def feedback(span: Range) -> tuple[Figure, Figure]:
    """Thumbs-down share (of the conversations with scored feedback, those with a thumbs down) and the mean score
    (over every scored feedback), by model and by workflow. One grouped query over the rollups."""
    down: dict[str, dict[tuple[str, dt.date], int]] = {"model": defaultdict(int), "workflow": defaultdict(int)}
    scored: dict[str, dict[tuple[str, dt.date], int]] = {"model": defaultdict(int), "workflow": defaultdict(int)}
    sums: dict[str, dict[tuple[str, dt.date], list[int]]] = {
        "model": defaultdict(lambda: [0, 0]),
        "workflow": defaultdict(lambda: [0, 0]),
    }
    rows = (
        _rollup(TrendDay, span)
        .filter(scored__gt=0)
        .values("start", "model_name", "workflow")
        .annotate(scored_n=Sum("scored"), down_n=Sum("down"), total=Sum("score_sum"), n=Sum("score_count"))
        .order_by()
    )
    for row in rows:
        start = _day(row["start"])
        for group, name in (("model", row["model_name"]), ("workflow", row["workflow"])):
            if name:
                scored[group][(name, start)] += row["scored_n"]
                down[group][(name, start)] += row["down_n"]
                pair = sums[group][(name, start)]
                pair[0] += row["total"]
                pair[1] += row["n"]

    def means(group: str) -> dict[tuple[str, dt.date], dict[str, float]]:
        return {key: {"mean_score": total / n} for key, (total, n) in sums[group].items() if n}

    def figure(group: str) -> Figure:
        return _figure(
            f"feedback-{group}",
            f"Thumbs-down share by {group}",
            f"Of the conversations with scored feedback, the share with a thumbs down, per {group}.",
            span,
            down[group],
            lambda name: {group: name, "score": str(Score.DOWN.value)},
            totals=scored[group],
            extras=means(group),
        )

    return figure("model"), figure("workflow")


def _tallies(span: Range) -> dict[str, dict[tuple[str, dt.date], int]]:
    """The flagged conversations of every tally figure, by name and bucket. One grouped query over the rollups."""
    counts: dict[str, dict[tuple[str, dt.date], int]] = defaultdict(lambda: defaultdict(int))
    for row in _rollup(TrendTally, span).values("start", "figure", "name").annotate(n=Sum("conversations")).order_by():
        counts[row["figure"]][_key(row["name"], row["start"])] += row["n"]
    return counts


def tool_health(span: Range, tallies: dict[str, dict[tuple[str, dt.date], int]]) -> list[Figure]:
    """Per tool, the conversations with an unanswered call of it, and with a call of it whose arguments are not
    JSON; and the conversations with an orphan tool result (a result names no tool)."""
    figures = []
    for figure, parameter in (
        (TrendFigure.UNANSWERED, "unanswered_tool"),
        (TrendFigure.INVALID_ARGUMENTS, "invalid_arguments_tool"),
    ):
        figures.append(
            _figure(
                figure.value,
                figure.label,
                f"{figure.label}: the conversations with at least one, per tool.",
                span,
                tallies[figure.value],
                functools.partial(_one_filter, parameter),
            )
        )
    orphans = {("Orphan tool results", start): n for (_name, start), n in tallies[TrendFigure.ORPHANS.value].items()}
    figures.append(
        _figure(
            "orphans",
            "Orphan tool results",
            "Conversations with a tool result whose id matches no call (such a result names no tool).",
            span,
            orphans,
            lambda name: {"has_warnings": "orphan_result"},
        )
    )
    return figures


def violations(span: Range, tallies: dict[str, dict[tuple[str, dt.date], int]]) -> Figure:
    """Conversations with a policy violation, per kind of artifact they injected."""
    return _figure(
        "violations",
        "Policy violations by artifact kind",
        "Conversations with an injection the context did not permit, per kind of artifact they injected.",
        span,
        tallies[TrendFigure.VIOLATIONS.value],
        lambda name: {"policy": "violation", "artifact_kind": name},
    )


@dataclass(frozen=True)
class ReviewerWeek:
    reviewer: str
    counts: list[int]  # conversations with a review they submitted, per bucket: what each count's link lists
    reviews: list[int]  # the reviews themselves (more when a conversation is an item of several queues)


def team_review(span: Range, reviews_seen: QuerySet[Review]) -> list[ReviewerWeek]:
    """Conversations reviewed per reviewer, per bucket of submission, among ``reviews_seen`` (the submitted reviews
    the caller may know of: chats.filters.conversations.submitted_reviews_seen, which the list's reviewed_by reads
    too). One grouped query."""
    since, until = span.bounds()
    counts: dict[str, dict[dt.date, tuple[int, int]]] = defaultdict(dict)
    for row in (
        reviews_seen.filter(submitted_at__gte=since, submitted_at__lt=until)
        .annotate(start=_truncated("submitted_at", span.bucket))
        .values("start", "reviewer__username")
        .annotate(conversations=Count("conversation", distinct=True), n=Count("id"))
        .order_by()
    ):
        counts[row["reviewer__username"]][_day(row["start"])] = (row["conversations"], row["n"])
    return [
        ReviewerWeek(
            name,
            [counts[name].get(start, (0, 0))[0] for start in span.starts],
            [counts[name].get(start, (0, 0))[1] for start in span.starts],
        )
        for name in sorted(counts, key=lambda name: (-sum(pair[1] for pair in counts[name].values()), name))
    ]


# The most queues whose agreement the page shows (those with the most reviews submitted in the range): three
# queries whatever the number of queues or reviews.
AGREEMENT_QUEUES = 6


@dataclass(frozen=True)
class QueueAgreement:
    queue_id: int
    name: str
    reviews: int  # submitted in the range
    questions: list[QuestionGroup]  # the queue page's figures (chats.review.rubric_agreement), over those reviews


def queue_agreements(span: Range, reviews_seen: QuerySet[Review]) -> tuple[list[QueueAgreement], int]:
    """Agreement per question of the AGREEMENT_QUEUES queues with the most reviews submitted in the range, over
    those reviews (an item counts when two of its reviews were submitted in the range), and how many other queues
    had reviews. The figures are the queue page's own (rubric_agreement, as queue_agreement calls it); three
    queries: the queues, their rubric versions, their reviews."""
    since, until = span.bounds()
    submitted = reviews_seen.filter(submitted_at__gte=since, submitted_at__lt=until)
    ranked = list(
        submitted.values("item__queue_id", "item__queue__name")
        .annotate(n=Count("id"))
        .order_by("-n", "item__queue__name", "item__queue_id")
    )
    if not ranked:
        return [], 0
    busiest = ranked[:AGREEMENT_QUEUES]
    ids = [row["item__queue_id"] for row in busiest]
    versions: dict[int, dict[int, Any]] = defaultdict(dict)
    for queue_id, version, questions in RubricVersion.objects.filter(queue_id__in=ids).values_list(
        "queue_id", "version", "questions"
    ):
        versions[queue_id][version] = questions
    answers: dict[int, list[tuple[Any, Any, int, Any]]] = defaultdict(list)
    for queue_id, item_id, reviewer, version, given in (
        submitted.filter(item__queue_id__in=ids)
        .values_list("item__queue_id", "item_id", "reviewer__username", "rubric_version__version", "answers")
        .order_by()
        .iterator(chunk_size=2000)
    ):
        answers[queue_id].append((item_id, reviewer, version, given))
    found = [
        QueueAgreement(
            row["item__queue_id"],
            row["item__queue__name"],
            row["n"],
            rubric_agreement(
                versions[row["item__queue_id"]],
                answers[row["item__queue_id"]],
                current=max(versions[row["item__queue_id"]], default=0),
            ),
        )
        for row in busiest
    ]
    return found, len(ranked) - len(busiest)


# ---- Two cohorts


@dataclass(frozen=True)
class Rate:
    cohort: str
    down: int
    scored: int

    @property
    def share(self) -> float | None:
        return self.down / self.scored if self.scored else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.down, self.scored)


Z95 = 1.959963984540054


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval (95% by default) of a proportion, or None without trials."""
    if trials <= 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


def two_proportion_p(a: Rate, b: Rate) -> float | None:
    """The two-sided p-value of the pooled two-proportion z-test, or None when it cannot be computed."""
    if not a.scored or not b.scored:
        return None
    pooled = (a.down + b.down) / (a.scored + b.scored)
    variance = pooled * (1 - pooled) * (1 / a.scored + 1 / b.scored)
    if variance <= 0:
        return 1.0
    z = abs(a.down / a.scored - b.down / b.scored) / math.sqrt(variance)
    return math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class Comparison:
    a: Rate
    b: Rate
    p_value: float | None

    @property
    def supported(self) -> bool:
        """Whether the data support a difference in thumbs-down share (two-proportion test at 5%)."""
        return self.p_value is not None and self.p_value < 0.05


def cohorts(span: Range, model_a: str, model_b: str) -> Comparison:
    """Thumbs-down share of two models over the whole range. One grouped query over the rollups."""
    found = {
        row["model_name"]: (row["down_n"], row["scored_n"])
        for row in TrendDay.objects.filter(
            day__gte=span.first, day__lte=span.last, model_name__in=[model_a, model_b], scored__gt=0
        )
        .values("model_name")
        .annotate(scored_n=Sum("scored"), down_n=Sum("down"))
        .order_by()
    }
    a = Rate(model_a, *found.get(model_a, (0, 0)))
    b = Rate(model_b, *found.get(model_b, (0, 0)))
    return Comparison(a, b, two_proportion_p(a, b))


@dataclass(frozen=True)
class Trends:
    span: Range
    figures: list[Figure]
    reviewers: list[ReviewerWeek]
    agreements: list[QueueAgreement] | None  # None: not for this caller (leads and auditors see agreement)
    agreements_omitted: int
    comparison: Comparison | None
    models: list[str]  # the models of the range, busiest first (the cohort choices)


def trends_read(
    span: Range,
    *,
    reviews_seen: QuerySet[Review] | None = None,
    agreement: bool = False,
    cohort_a: str = "",
    cohort_b: str = "",
) -> Trends:
    """The page's figures; ``reviews_seen``: the submitted reviews the caller may know of (every one without it);
    ``agreement``: with agreement per queue (for those who see everyone's answers)."""
    if reviews_seen is None:
        reviews_seen = Review.objects.filter(state=ReviewState.SUBMITTED)
    sources, models, _by_source, by_model = volume(span)
    model_totals: dict[str, int] = defaultdict(int)
    for (name, _start), value in by_model.items():
        if name:
            model_totals[name] += value
    model_names = sorted(model_totals, key=lambda name: (-model_totals[name], name))
    cohort_a = cohort_a or (model_names[0] if model_names else "")
    cohort_b = cohort_b or (model_names[1] if len(model_names) > 1 else "")
    comparison = cohorts(span, cohort_a, cohort_b) if cohort_a and cohort_b else None
    tallies = _tallies(span)
    figures = [sources, models, *feedback(span), *tool_health(span, tallies), violations(span, tallies)]
    agreements, omitted = queue_agreements(span, reviews_seen) if agreement else (None, 0)
    return Trends(span, figures, team_review(span, reviews_seen), agreements, omitted, comparison, model_names)
