"""Template helpers for the review pages: safe rendering of untrusted content, query strings, charts."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlencode

from django import template
from django.http import QueryDict
from django.template import engines
from django.utils.safestring import SafeString, mark_safe

from chats import rendering
from chats.models import Feedback, InjectedArtifact

register = template.Library()


@register.filter
def markdown(text: str | None) -> SafeString:
    """Untrusted Markdown as sanitized HTML."""
    return rendering.render_markdown(text or "")


@register.filter
def pretty_json(value: Any) -> str:
    return rendering.pretty_json(value)


@register.filter
def as_json_or_none(text: str) -> Any:
    return rendering.json_or_none(text or "")


@register.filter
def safe_image_src(url: Any) -> str:
    """The URL when an <img> may load it (https or data:image/), else ""."""
    return url if isinstance(url, str) and rendering.safe_image_src(url) else ""


@register.filter
def safe_media_src(url: Any) -> str:
    return url if isinstance(url, str) and url.strip().lower().startswith(("https:", "data:audio/")) else ""


@register.filter
def audio_data_uri(part: dict[str, Any]) -> str:
    """An audio part as a playable URI: its https URL, or its base64 data as a data: URI."""
    url = part.get("url")
    if isinstance(url, str):
        return safe_media_src(url)
    data, fmt = part.get("data"), part.get("format") or "wav"
    if isinstance(data, str) and isinstance(fmt, str) and fmt.isalnum():
        return f"data:audio/{fmt};base64,{data}"
    return ""


@register.filter
def score_symbol(score: int | None) -> str:
    return {1: "▲", 0: "●", -1: "▼"}.get(score, "") if score is not None else ""


@register.filter
def score_word(score: int | None) -> str:
    return {1: "up", 0: "neutral", -1: "down"}.get(score, "none") if score is not None else "none"


@register.filter
def label_names(feedback: Feedback | None) -> list[str]:
    if feedback is None or feedback == "":
        return []
    return [label.name for label in feedback.labels.all()]


@register.filter
def size_text(text: str) -> str:
    n = len(text.encode())
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1024 / 1024:.1f} MB"


FLATTEN_DEPTH = 32


@register.filter
def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A nested JSON object as (dotted path, leaf value) rows, for a readable record table. Below FLATTEN_DEPTH
    levels a value is shown whole, as JSON: a record is a form's fields, not an arbitrarily deep tree."""
    rows: list[tuple[str, Any]] = []

    def walk(node: Any, path: str, depth: int) -> None:
        if depth < FLATTEN_DEPTH and isinstance(node, dict) and node:
            for key, child in node.items():
                walk(child, f"{path}.{key}" if path else str(key), depth + 1)
        elif (
            depth < FLATTEN_DEPTH
            and isinstance(node, list)
            and node
            and any(isinstance(item, dict | list) for item in node)
        ):
            for index, child in enumerate(node):
                walk(child, f"{path}[{index}]", depth + 1)
        else:
            rows.append((path or "(value)", node if isinstance(node, str) else rendering.pretty_json(node)))

    walk(value, prefix, 0)
    return rows


PROTOCOL_TEXT_KEYS = ("markdown", "aimd", "content", "protocol", "text", "body", "description")


@register.filter
def artifact_markdown(artifact: InjectedArtifact) -> str:
    """The Markdown body of an injected protocol or discussion, when its payload has one."""
    payload = artifact.payload
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        for key in PROTOCOL_TEXT_KEYS:
            if isinstance(payload.get(key), str):
                return payload[key]
    return ""


@register.filter
def artifact_data(artifact: InjectedArtifact) -> Any:
    """What a record table shows: the record's ``data`` when it has one, else the whole payload."""
    payload = artifact.payload
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        return payload["data"]
    return payload


@register.simple_tag
def query(base: str, **changes: Any) -> str:
    """``base`` (a query string) with some parameters set or, when given "", removed; with a leading "?"."""
    params = QueryDict(base, mutable=True)
    for key, value in changes.items():
        if value in ("", None):
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else ""


@register.simple_tag
def qs_join(base: str, **extra: Any) -> str:
    pairs = [(k, v) for k, v in extra.items() if v not in ("", None)]
    tail = urlencode(pairs)
    joined = "&".join(part for part in (base, tail) if part)
    return f"?{joined}" if joined else ""


@register.simple_tag(takes_context=True)
def jinja_include(context: template.Context, template_name: str, **extra: Any) -> SafeString:
    """A partial of templates/jinja2/ (see chats/jinja2.py) rendered with this page's context, plus ``extra``:
    what ``{% include ... with ... %}`` does for a Django template."""
    values = cast("dict[str, Any]", context.flatten())
    values.update(extra)
    request = getattr(context, "request", None)
    html = engines["jinja2"].get_template(template_name).render(values, request)
    return mark_safe(html)  # noqa: S308 - rendered by Jinja2 with autoescaping on


@register.inclusion_tag("chats/_bar_chart.html")
def bar_chart(rows: list[tuple[Any, ...]], title: str, chart_id: str) -> dict[str, Any]:
    """A horizontal bar chart as inline SVG: one bar per (label, ..., count) row, widths proportional."""
    bar_height, gap, label_width, bar_area = 22, 6, 190, 260
    peak = max((row[-1] for row in rows), default=0) or 1
    bars = []
    for index, row in enumerate(rows):
        count = row[-1]
        label = str(row[0])
        bars.append(
            {
                "label": label if len(label) <= 28 else label[:27] + "…",
                "full_label": label,
                "count": count,
                "y": index * (bar_height + gap),
                "text_y": index * (bar_height + gap) + bar_height * 0.7,
                "width": max(round(bar_area * count / peak), 2 if count else 0),
                "count_x": label_width + max(round(bar_area * count / peak), 2 if count else 0) + 6,
            }
        )
    return {
        "bars": bars,
        "title": title,
        "chart_id": chart_id,
        "label_width": label_width,
        "label_x": label_width - 8,
        "width": label_width + bar_area + 60,
        "height": max(len(rows) * (bar_height + gap), bar_height),
        "bar_height": bar_height,
    }
