"""The agreement chart of the review dashboard: one bar per question's alpha (per label for a multi-label
question) on a fixed -1..1 scale with its zero line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chats.review.agreement import QuestionAgreement, QuestionKind

__all__ = ["agreement_chart_layout", "agreement_chart_rows"]


def agreement_chart_rows(questions: Mapping[str, QuestionAgreement]) -> list[tuple[str, float]]:
    """Rows for the dashboard's bar chart partial (templates/jinja2/chats/_bar_chart.html): one
    ``(label, alpha)`` per question in the given order, one per label (``"question: label"``) for a multi-label
    question, alpha rounded to 2 places; a figure over too few items (not ``meaningful``) says so in its label
    (``"tone (n=4, too few)"``); an undefined one is left out.

    That partial scales bars to the largest value and draws a value at or below 0 as a stub: for a fixed -1..1
    scale use ``agreement_chart_layout`` (same keys as the partial's ``bar_chart_layout``)."""
    rows: list[tuple[str, float]] = []
    for name, question in questions.items():
        if question.kind is QuestionKind.MULTI_LABEL:
            for label in question.per_label.values():
                if label.alpha is not None:
                    rows.append(
                        (_row_label(f"{name}: {label.label}", label.n_items, label.meaningful), round(label.alpha, 2))
                    )
        elif question.alpha is not None:
            rows.append((_row_label(name, question.n_items, question.meaningful), round(question.alpha, 2)))
    return rows


def _row_label(name: str, n_items: int, meaningful: bool) -> str:
    return name if meaningful else f"{name} (n={n_items}, too few)"


def agreement_chart_layout(rows: Sequence[tuple[str, float]]) -> dict[str, Any]:
    """The geometry of a horizontal agreement chart on a fixed -1..1 scale with its zero line, with the keys of
    ``chats.jinja2.bar_chart_layout`` (so the ``_bar_chart.html`` markup fits) plus ``x`` per bar (where a bar
    starts: left of the zero line for a negative value) and ``zero_x``. Values are clamped to -1..1."""
    bar_height, gap, label_width, bar_area = 22, 6, 190, 260
    half = bar_area / 2
    zero_x = label_width + half
    bars = []
    for index, (name, raw) in enumerate(rows):
        value = min(max(float(raw), -1.0), 1.0)
        width = round(half * abs(value))
        if value and not width:
            width = 2
        x = zero_x - width if value < 0 else zero_x
        bars.append(
            {
                "label": name if len(name) <= 28 else name[:27] + "…",
                "full_label": name,
                "count": raw,
                "x": x,
                "y": index * (bar_height + gap),
                "text_y": index * (bar_height + gap) + bar_height * 0.7,
                "width": width,
                "count_x": (x + width + 6) if value >= 0 else zero_x + 6,
            }
        )
    return {
        "bars": bars,
        "label_width": label_width,
        "label_x": label_width - 8,
        "zero_x": zero_x,
        "width": label_width + bar_area + 60,
        "height": max(len(rows) * (bar_height + gap), bar_height),
        "bar_height": bar_height,
    }
