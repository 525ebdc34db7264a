"""The home page's counts: conversations by source, model, status, score and label, the busiest tools and
artifacts, and the latest audit events. One grouped query per figure."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

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
    )
