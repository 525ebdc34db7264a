"""The home page: the dashboard's figures, each number a link to the conversation list behind it."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from chats.models import ReviewStatus, Score
from chats.selectors.dashboard import Dashboard, dashboard_read
from chats.views.common import reviewer_page


def dashboard_links(dashboard: Dashboard) -> dict[str, list[str | None]]:
    """Per figure of the dashboard, the conversation list behind each of its numbers (None where the list has no
    filter for it: a conversation without a model, a tool call without a name)."""
    base = reverse("chats:conversation_list")

    def to(**query: str) -> str:
        return f"{base}?{urlencode(query)}"

    scores = {label: str(value) for value, label in Score.choices}
    statuses = {label: str(value) for value, label in ReviewStatus.choices}
    return {
        "by_source": [to(source=name) for name, _ in dashboard.by_source],
        "by_status": [to(status=statuses[label]) for label, _ in dashboard.by_status],
        "by_model": [to(model=name) if name != "(none)" else None for name, _ in dashboard.by_model],
        "by_score": [to(score=scores[label]) for label, _ in dashboard.by_score],
        "by_label": [to(label=name) for name, _ in dashboard.by_label],
        "top_tools": [to(tool_name=name) if name != "(unnamed)" else None for name, _ in dashboard.top_tools],
        "top_artifacts": [to(artifact_id=artifact_id) for artifact_id, _, _ in dashboard.top_artifacts],
        "violation_chart_rows": [
            to(policy="violation", date_from=day, date_to=day) for day, _ in dashboard.violation_chart_rows
        ],
    }


@require_GET
@reviewer_page()
def home(request: HttpRequest) -> HttpResponse:
    dashboard = dashboard_read()
    context = {"dashboard": dashboard, "dashboard_links": dashboard_links(dashboard), "active_nav": "home"}
    return render(request, "chats/home.html", context, using="jinja2")
