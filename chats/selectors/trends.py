"""The Trends page's figures: time series over a range of days or weeks (UTC), each point a count of
conversations that the conversation list's own filters select exactly (same range, same bucket), so that every
point links to the conversations behind it.

A conversation falls in the bucket of its last activity (the list's date_from/date_to read the same column), and
every figure is one grouped query over the range, read through the (last_activity_at) index.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import TruncDate, TruncWeek

from chats.models import Conversation, Feedback, InjectedArtifact, Message, Review, ReviewState, Score, ToolCall

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


def _truncated(column: str, bucket: Bucket) -> Any:
    return (TruncDate if bucket == "day" else TruncWeek)(column, tzinfo=dt.UTC)


def _day(value: dt.date | dt.datetime) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


def _in_range(queryset: QuerySet[Any], span: Range, prefix: str = "") -> QuerySet[Any]:
    since, until = span.bounds()
    return queryset.filter(**{f"{prefix}last_activity_at__gte": since, f"{prefix}last_activity_at__lt": until})


def _figure(
    key: str,
    title: str,
    description: str,
    span: Range,
    counts: dict[tuple[str, dt.date], int],
    filters_of: Any,
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


def _key(value: Any, start: Any) -> tuple[str, dt.date]:
    return (value, _day(start))


def volume(span: Range) -> tuple[Figure, Figure, dict[tuple[str, dt.date], int], dict[tuple[str, dt.date], int]]:
    """Conversations by source and by model per bucket, and their messages. One grouped query."""
    by_source: dict[tuple[str, dt.date], int] = defaultdict(int)
    by_model: dict[tuple[str, dt.date], int] = defaultdict(int)
    messages_source: dict[tuple[str, dt.date], int] = defaultdict(int)
    messages_model: dict[tuple[str, dt.date], int] = defaultdict(int)
    rows = (
        _in_range(Conversation.objects.all(), span)
        .annotate(start=_truncated("last_activity_at", span.bucket))
        .values("start", "source__name", "model_name")
        .annotate(n=Count("id"), messages=Sum("message_count"))
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


def _scored(span: Range) -> QuerySet[Conversation]:
    """The conversations of the range with scored feedback, each marked has_down when one is a thumbs down."""
    scored = Feedback.objects.filter(conversation=OuterRef("pk"), score__isnull=False)
    down = Feedback.objects.filter(conversation=OuterRef("pk"), score=Score.DOWN)
    conversations: QuerySet[Conversation] = _in_range(Conversation.objects.all(), span)
    return conversations.annotate(has_scored=Exists(scored), has_down=Exists(down)).filter(has_scored=True)


def feedback(span: Range) -> tuple[Figure, Figure]:
    """Thumbs-down share (of the conversations with scored feedback, those with a thumbs down) and the mean score,
    by model and by workflow. Two grouped queries."""
    down: dict[str, dict[tuple[str, dt.date], int]] = {"model": defaultdict(int), "workflow": defaultdict(int)}
    scored: dict[str, dict[tuple[str, dt.date], int]] = {"model": defaultdict(int), "workflow": defaultdict(int)}
    rows = (
        _scored(span)
        .annotate(start=_truncated("last_activity_at", span.bucket))
        .values("start", "model_name", "workflow")
        .annotate(scored=Count("id"), down=Count("id", filter=Q(has_down=True)))
        .order_by()
    )
    for row in rows:
        start = _day(row["start"])
        for group, name in (("model", row["model_name"]), ("workflow", row["workflow"])):
            if name:
                scored[group][(name, start)] += row["scored"]
                down[group][(name, start)] += row["down"]
    sums: dict[str, dict[tuple[str, dt.date], list[int]]] = {
        "model": defaultdict(lambda: [0, 0]),
        "workflow": defaultdict(lambda: [0, 0]),
    }
    score_rows = (
        _in_range(Feedback.objects.filter(score__isnull=False), span, "conversation__")
        .annotate(start=_truncated("conversation__last_activity_at", span.bucket))
        .values("start", "conversation__model_name", "conversation__workflow")
        .annotate(total=Sum("score"), n=Count("id"))
        .order_by()
    )
    for row in score_rows:
        start = _day(row["start"])
        for group, column in (("model", "conversation__model_name"), ("workflow", "conversation__workflow")):
            if row[column]:
                pair = sums[group][(row[column], start)]
                pair[0] += row["total"]
                pair[1] += row["n"]

    def means(group: str) -> dict[tuple[str, dt.date], dict[str, float]]:
        return {key: {"mean_score": total / n} for key, (total, n) in sums[group].items() if n}

    by_model = _figure(
        "feedback-model",
        "Thumbs-down share by model",
        "Of the conversations with scored feedback, the share with a thumbs down, per model.",
        span,
        down["model"],
        lambda name: {"model": name, "score": str(Score.DOWN.value)},
        totals=scored["model"],
        extras=means("model"),
    )
    by_workflow = _figure(
        "feedback-workflow",
        "Thumbs-down share by workflow",
        "Of the conversations with scored feedback, the share with a thumbs down, per workflow.",
        span,
        down["workflow"],
        lambda name: {"workflow": name, "score": str(Score.DOWN.value)},
        totals=scored["workflow"],
        extras=means("workflow"),
    )
    return by_model, by_workflow


def tool_health(span: Range) -> list[Figure]:
    """Per tool, the conversations with an unanswered call of it, and with a call of it whose arguments are not
    JSON; and the conversations with an orphan tool result (a result names no tool). Three grouped queries, each
    over the flagged rows (partial indexes)."""
    figures = []
    for key, title, rows, parameter in (
        (
            "unanswered",
            "Unanswered tool calls",
            ToolCall.objects.filter(result_message__isnull=True),
            "unanswered_tool",
        ),
        (
            "invalid-arguments",
            "Tool calls with invalid arguments",
            ToolCall.objects.exclude(arguments_error=""),
            "invalid_arguments_tool",
        ),
    ):
        counts = {
            _key(row["name"], row["start"]): row["n"]
            for row in _in_range(rows, span, "conversation__")
            .annotate(start=_truncated("conversation__last_activity_at", span.bucket))
            .values("start", "name")
            .annotate(n=Count("conversation_id", distinct=True))
            .order_by()
        }
        figures.append(
            _figure(
                key,
                title,
                f"{title}: the conversations with at least one, per tool.",
                span,
                counts,
                lambda name, parameter=parameter: {parameter: name},
            )
        )
    orphans = {
        _key("Orphan tool results", row["start"]): row["n"]
        for row in _in_range(Message.objects.filter(is_orphan_result=True), span, "conversation__")
        .annotate(start=_truncated("conversation__last_activity_at", span.bucket))
        .values("start")
        .annotate(n=Count("conversation_id", distinct=True))
        .order_by()
    }
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


def violations(span: Range) -> Figure:
    """Conversations with a policy violation, per kind of artifact they injected. One grouped query."""
    counts = {
        _key(row["kind"], row["start"]): row["n"]
        for row in _in_range(
            InjectedArtifact.objects.filter(conversation__policy_violation=True), span, "conversation__"
        )
        .annotate(start=_truncated("conversation__last_activity_at", span.bucket))
        .values("start", "kind")
        .annotate(n=Count("conversation_id", distinct=True))
        .order_by()
    }
    return _figure(
        "violations",
        "Policy violations by artifact kind",
        "Conversations with an injection the context did not permit, per kind of artifact they injected.",
        span,
        counts,
        lambda name: {"policy": "violation", "artifact_kind": name},
    )


@dataclass(frozen=True)
class ReviewerWeek:
    reviewer: str
    counts: list[int]


def team_review(span: Range) -> list[ReviewerWeek]:
    """Reviews submitted per reviewer, per bucket of submission. One grouped query."""
    since, until = span.bounds()
    counts: dict[str, dict[dt.date, int]] = defaultdict(dict)
    for row in (
        Review.objects.filter(state=ReviewState.SUBMITTED, submitted_at__gte=since, submitted_at__lt=until)
        .annotate(start=_truncated("submitted_at", span.bucket))
        .values("start", "reviewer__username")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts[row["reviewer__username"]][_day(row["start"])] = row["n"]
    return [
        ReviewerWeek(name, [counts[name].get(start, 0) for start in span.starts])
        for name in sorted(counts, key=lambda name: (-sum(counts[name].values()), name))
    ]


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
    """Thumbs-down share of two models over the whole range. One grouped query."""
    found = {
        row["model_name"]: (row["down"], row["scored"])
        for row in _scored(span)
        .filter(model_name__in=[model_a, model_b])
        .values("model_name")
        .annotate(scored=Count("id"), down=Count("id", filter=Q(has_down=True)))
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
    comparison: Comparison | None
    models: list[str]  # the models of the range, busiest first (the cohort choices)


def trends_read(span: Range, *, cohort_a: str = "", cohort_b: str = "") -> Trends:
    sources, models, _by_source, by_model = volume(span)
    model_totals: dict[str, int] = defaultdict(int)
    for (name, _start), value in by_model.items():
        if name:
            model_totals[name] += value
    model_names = sorted(model_totals, key=lambda name: (-model_totals[name], name))
    cohort_a = cohort_a or (model_names[0] if model_names else "")
    cohort_b = cohort_b or (model_names[1] if len(model_names) > 1 else "")
    comparison = cohorts(span, cohort_a, cohort_b) if cohort_a and cohort_b else None
    figures = [sources, models, *feedback(span), *tool_health(span), violations(span)]
    return Trends(span, figures, team_review(span), comparison, model_names)
