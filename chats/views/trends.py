"""The Trends page: time series of the conversations over a range of days or weeks, each point a link to the
conversation list filtered to exactly the conversations it counts, and two models' thumbs-down shares compared.

The charts are SVG drawn here, on the server (see the README): the page needs no script, works under the strict
Content-Security-Policy, and each chart carries its own title, description and data table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from chats.errors import InvalidInput
from chats.filters.conversations import submitted_reviews_seen
from chats.integers import require_int
from chats.review.agreement import MIN_ITEMS
from chats.selectors.trends import Bucket, Figure, Range, Trends, aligned_range, trends_read
from chats.storable import unstorable
from chats.views.common import reviewer_page, roles_of

# How many buckets a page shows at most, and by default.
MAX_PERIODS = {"day": 92, "week": 104}
DEFAULT_PERIODS = {"day": 30, "week": 12}


class TrendsForm(forms.Form):
    bucket = forms.ChoiceField(choices=[("week", "Week"), ("day", "Day")], required=False, label="Bucket")
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    cohort_a = forms.CharField(required=False, max_length=200, label="Model A")
    cohort_b = forms.CharField(required=False, max_length=200, label="Model B")


def trends_range(data: Any, today: dt.date) -> tuple[Range, dict[str, str]]:
    """The range a request asks for, and the cohorts; raises InvalidInput naming the parameter."""
    for name in ("bucket", "date_from", "date_to", "cohort_a", "cohort_b", "periods"):
        found = unstorable(data.get(name, ""))
        if found is not None:
            raise InvalidInput([{"path": name, "message": f"not a value that can be stored: {found.reason}"}])
    form = TrendsForm(data)
    if not form.is_valid():
        raise InvalidInput(
            [
                {"path": name, "message": " ".join(str(message) for message in messages)}
                for name, messages in form.errors.items()
            ]
        )
    bucket: Bucket = "day" if form.cleaned_data["bucket"] == "day" else "week"
    last = form.cleaned_data["date_to"] or today
    first = form.cleaned_data["date_from"]
    periods = DEFAULT_PERIODS[bucket]
    if data.get("periods", "") != "":  # checked even when date_from sets the range
        periods = require_int(data["periods"], name="periods", minimum=1, maximum=MAX_PERIODS[bucket])
    if first is None:
        step = 1 if bucket == "day" else 7
        first = last - dt.timedelta(days=step * (periods - 1))
    if first > last:
        raise InvalidInput([{"path": "date_from", "message": "must not be after date_to"}])
    span = aligned_range(first, last, bucket)
    if len(span.starts) > MAX_PERIODS[bucket]:
        raise InvalidInput([{"path": "date_from", "message": f"at most {MAX_PERIODS[bucket]} {bucket}s from date_to"}])
    return span, {"a": form.cleaned_data["cohort_a"], "b": form.cleaned_data["cohort_b"]}


@dataclass(frozen=True)
class ListLink:
    """The conversation list filtered by a series' filters, over any days: the list's path and the filters are
    encoded once, and each point adds its days (a chart has a link per point: hundreds over two years)."""

    prefix: str

    @classmethod
    def of(cls, filters: dict[str, str]) -> ListLink:
        assert not {"date_from", "date_to"} & filters.keys(), "the days are each point's own"
        query = urlencode(filters)
        return cls(f"{reverse('chats:conversation_list')}?{query}{'&' if query else ''}")

    def over(self, first: dt.date, last: dt.date) -> str:
        return f"{self.prefix}date_from={first.isoformat()}&date_to={last.isoformat()}"


def list_url(filters: dict[str, str], first: dt.date, last: dt.date) -> str:
    """The conversation list of exactly these conversations: the filters, over the days first to last."""
    return ListLink.of(filters).over(first, last)


def reviewed_list_url(reviewer: str, first: dt.date, last: dt.date) -> str:
    """The conversation list of the conversations ``reviewer`` submitted a review of, from ``first`` to ``last``."""
    query = {"reviewed_by": reviewer, "reviewed_from": first.isoformat(), "reviewed_to": last.isoformat()}
    return f"{reverse('chats:conversation_list')}?{urlencode(query)}"


def bucket_label(span: Range, start: dt.date) -> str:
    return start.isoformat() if span.bucket == "day" else f"week of {start.isoformat()}"


# ---- Chart geometry (templates/jinja2/chats/_trend_chart.html)

ROW_HEIGHT, ROW_GAP, LABEL_WIDTH, PLOT_WIDTH = 44, 10, 170, 560


@dataclass(frozen=True)
class Column:
    x: float
    y: float
    width: float
    height: float
    href: str | None
    label: str  # what a screen reader says, and the tooltip


@dataclass(frozen=True)
class Row:
    name: str
    label_y: float
    base_y: float
    columns: list[Column]
    cells: list[dict[str, Any]]  # the data table's cells: text, href
    total_text: str


def _point_text(figure: Figure, span: Range, name: str, point: Any) -> str:
    when = bucket_label(span, point.start)
    if figure.rate:
        share = f" ({point.share:.0%})" if point.of else ""
        mean = point.extra.get("mean_score")
        mean_text = f", mean score {mean:+.2f}" if mean is not None else ""
        return f"{name}, {when}: {point.value} of {point.of} scored conversations with a thumbs down{share}{mean_text}"
    messages = point.extra.get("messages")
    messages_text = f", {int(messages)} messages" if messages is not None else ""
    return f"{name}, {when}: {point.value} conversation{'s' if point.value != 1 else ''}{messages_text}"


def chart_layout(figure: Figure, span: Range) -> dict[str, Any]:
    starts = span.starts
    slot = PLOT_WIDTH / max(len(starts), 1)
    width = max(min(slot * 0.8, 28), 2)
    if figure.rate:
        peak = 1.0
    else:
        peak = float(max((point.value for series in figure.series for point in series.points), default=0) or 1)
    rows = []
    for index, series in enumerate(figure.series):
        top = index * (ROW_HEIGHT + ROW_GAP)
        base = top + ROW_HEIGHT
        columns, cells = [], []
        link = ListLink.of(series.filters)
        for position, point in enumerate(series.points):
            magnitude = (point.share or 0.0) if figure.rate else point.value / peak
            href = link.over(point.start, span.bucket_last(point.start)) if point.value else None
            text = _point_text(figure, span, series.name, point)
            if point.value or (figure.rate and point.of):
                height = max(magnitude * ROW_HEIGHT, 2)
                columns.append(Column(LABEL_WIDTH + position * slot, base - height, width, height, href, text))
            cell = str(point.value)
            if figure.rate:
                cell = f"{point.value} of {point.of}" + (f" ({point.share:.0%})" if point.of else "")
                if "mean_score" in point.extra:
                    cell += f"; mean {point.extra['mean_score']:+.2f}"
            elif "messages" in point.extra:
                cell += f" ({int(point.extra['messages'])} msg)"
            cells.append({"text": cell, "href": href, "label": text})
        total = series.total
        total_text = f"{total} of {sum(point.of or 0 for point in series.points)}" if figure.rate else str(total)
        rows.append(Row(series.name, top + ROW_HEIGHT / 2 + 4, base, columns, cells, total_text))
    return {
        "rows": rows,
        "width": LABEL_WIDTH + PLOT_WIDTH + 10,
        "height": max(len(rows) * (ROW_HEIGHT + ROW_GAP), ROW_HEIGHT),
        "label_x": LABEL_WIDTH - 8,
        "plot_x1": LABEL_WIDTH,
        "plot_x2": LABEL_WIDTH + PLOT_WIDTH,
        "heads": [bucket_label(span, start) for start in starts],
        "axis": [
            {"x": LABEL_WIDTH + position * slot, "text": start.strftime("%m-%d")}
            for position, start in enumerate(starts)
            if position % max(len(starts) // 6, 1) == 0
        ],
    }


@require_GET
@reviewer_page()
def trends(request: HttpRequest) -> HttpResponse:
    today = timezone.now().date()
    try:
        span, cohort = trends_range(request.GET, today)
    except InvalidInput as invalid:
        context = {"errors": invalid.errors, "form": TrendsForm(request.GET), "active_nav": "trends"}
        return render(request, "chats/trends.html", context, status=400, using="jinja2")
    data: Trends = trends_read(
        span,
        reviews_seen=submitted_reviews_seen(request),
        agreement=roles_of(request).can_oversee,
        cohort_a=cohort["a"],
        cohort_b=cohort["b"],
    )
    reviewer_rows = [
        {
            "name": reviewer.reviewer,
            "cells": [
                {
                    "count": count,
                    "reviews": reviews,
                    "href": reviewed_list_url(reviewer.reviewer, start, span.bucket_last(start)) if count else None,
                    "label": f"{reviewer.reviewer}, {bucket_label(span, start)}: {count} conversation"
                    f"{'s' if count != 1 else ''} reviewed" + (f" ({reviews} reviews)" if reviews != count else ""),
                }
                for start, count, reviews in zip(span.starts, reviewer.counts, reviewer.reviews, strict=True)
            ],
        }
        for reviewer in data.reviewers
    ]
    charts = [{"figure": figure, "layout": chart_layout(figure, span)} for figure in data.figures]
    comparison = data.comparison
    cohort_links = {}
    if comparison is not None:
        for rate in (comparison.a, comparison.b):
            cohort_links[rate.cohort] = list_url({"model": rate.cohort, "score": "-1"}, span.first, span.last)
    form = TrendsForm(
        initial={
            "bucket": span.bucket,
            "date_from": span.first,
            "date_to": span.last,
            "cohort_a": comparison.a.cohort if comparison else "",
            "cohort_b": comparison.b.cohort if comparison else "",
        }
    )
    context = {
        "trends": data,
        "span": span,
        "charts": charts,
        "form": form,
        "comparison": comparison,
        "cohort_links": cohort_links,
        "reviewer_rows": reviewer_rows,
        "agreement_min_items": MIN_ITEMS,
        "review_heads": [bucket_label(span, start) for start in span.starts],
        "active_nav": "trends",
        "errors": [],
    }
    return render(request, "chats/trends.html", context, using="jinja2")
