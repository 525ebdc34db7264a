"""The home page's counts: conversations by source, model, status, score and label, the busiest tools and
artifacts, policy violations per day, the artifacts with the worst feedback, and the latest audit events. One
grouped query per figure."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, F, FloatField, Q
from django.db.models.functions import Cast, TruncDate
from django.utils import timezone

from chats.models import (
    AuditEvent,
    Conversation,
    Feedback,
    FeedbackLabel,
    InjectedArtifact,
    ReviewStatus,
    Score,
    ToolCall,
)


@dataclass(frozen=True)
class Dashboard:
    total: int
    by_source: list[tuple[str, int]]
    by_model: list[tuple[str, int]]
    by_status: list[tuple[str, int]]
    by_score: list[tuple[str, int]]
    by_label: list[tuple[str, int]]
    top_tools: list[tuple[str, int]]
    top_artifacts: list[tuple[str, str, int]]
    recent_events: list[AuditEvent]
    violations_by_day: list[ViolationDay]
    worst_artifacts: list[ArtifactFeedback]

    @property
    def violation_chart_rows(self) -> list[tuple[str, int]]:
        """(day, violations) of the days with judged conversations, newest first: the chart's bars."""
        return [(row.day.isoformat(), row.violations) for row in reversed(self.violations_by_day) if row.with_context]


@dataclass(frozen=True)
class ViolationDay:
    day: dt.date
    with_context: int  # conversations (by last activity that day) with an injection context: judged
    violations: int  # of those, the ones with an injection that was not permitted


@dataclass(frozen=True)
class ArtifactFeedback:
    kind: str
    artifact_id: str
    up: int
    down: int
    scored: int  # feedback with a score (up, neutral or down) on the conversations that injected it

    @property
    def up_share(self) -> float:
        return self.up / self.scored if self.scored else 0.0


VIOLATION_DAYS = 30


def violations_by_day(*, days: int = VIOLATION_DAYS, today: dt.date | None = None) -> list[ViolationDay]:
    """Per day (UTC, by last activity) of the last ``days``: the conversations with an injection context and
    the policy violations among them, every day listed (zeros too). One grouped query."""
    today = today or timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    since = dt.datetime.combine(first, dt.time.min, tzinfo=dt.UTC)
    counts: dict[dt.date, tuple[int, int]] = {
        row["day"]: (row["with_context"], row["violations"])
        for row in Conversation.objects.filter(last_activity_at__gte=since, policy_violation__isnull=False)
        .annotate(day=TruncDate("last_activity_at", tzinfo=dt.UTC))
        .values("day")
        .annotate(with_context=Count("id"), violations=Count("id", filter=Q(policy_violation=True)))
        .order_by()
    }
    result = []
    for offset in range(days):
        day = first + dt.timedelta(days=offset)
        with_context, violations = counts.get(day, (0, 0))
        result.append(ViolationDay(day, with_context, violations))
    return result


def worst_artifacts(*, top: int = 10) -> list[ArtifactFeedback]:
    """The artifacts whose conversations got the lowest share of thumbs up (then the most thumbs down), among
    those with scored feedback. One grouped query over the feedback joined to the injections."""
    rows = (
        Feedback.objects.filter(score__isnull=False, conversation__artifacts__isnull=False)
        .values(kind=F("conversation__artifacts__kind"), artifact_id=F("conversation__artifacts__artifact_id"))
        .annotate(
            up=Count("id", distinct=True, filter=Q(score=Score.UP)),
            down=Count("id", distinct=True, filter=Q(score=Score.DOWN)),
            scored=Count("id", distinct=True),
        )
        .annotate(share=Cast("up", FloatField()) / Cast("scored", FloatField()))
        .order_by("share", "-down", "kind", "artifact_id")[:top]
    )
    return [ArtifactFeedback(row["kind"], row["artifact_id"], row["up"], row["down"], row["scored"]) for row in rows]


def dashboard_read(*, top: int = 10) -> Dashboard:
    by_source = [
        (row["source__name"], row["n"])
        for row in Conversation.objects.values("source__name").annotate(n=Count("id")).order_by("-n", "source__name")
    ]
    by_model = [
        (row["model_name"] or "(none)", row["n"])
        for row in Conversation.objects.values("model_name").annotate(n=Count("id")).order_by("-n", "model_name")[:top]
    ]
    status_counts = dict(Conversation.objects.values_list("review_status").annotate(n=Count("id")).order_by())
    by_status = [(label, status_counts.get(value, 0)) for value, label in ReviewStatus.choices]
    score_counts = dict(
        Feedback.objects.filter(score__isnull=False).values_list("score").annotate(n=Count("id")).order_by()
    )
    by_score = [(label, score_counts.get(value, 0)) for value, label in reversed(Score.choices)]
    by_label = [
        (row["label__name"], row["n"])
        for row in FeedbackLabel.objects.values("label__name").annotate(n=Count("id")).order_by("-n")[:top]
    ]
    top_tools = [
        (row["name"] or "(unnamed)", row["n"])
        for row in ToolCall.objects.values("name").annotate(n=Count("id")).order_by("-n", "name")[:top]
    ]
    top_artifacts = [
        (row["artifact_id"], row["kind"], row["n"])
        for row in InjectedArtifact.objects.values("artifact_id", "kind")
        .annotate(n=Count("id"))
        .order_by("-n", "artifact_id")[:top]
    ]
    return Dashboard(
        total=sum(status_counts.values()),
        by_source=by_source,
        by_model=by_model,
        by_status=by_status,
        by_score=by_score,
        by_label=by_label,
        top_tools=top_tools,
        top_artifacts=top_artifacts,
        recent_events=list(AuditEvent.objects.order_by("-created_at", "-id")[:15]),
        violations_by_day=violations_by_day(),
        worst_artifacts=worst_artifacts(top=top),
    )
