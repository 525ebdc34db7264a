"""The Jinja2 environment of every page and fragment of the review application (templates/jinja2/).

One engine for the application's pages, so that a thread page renders in one engine from top to bottom: a
1,000-message thread repeats its partials thousands of times, and Jinja2 (compiled to Python) renders each in a
fraction of what the Django engine takes. The admin keeps the Django engine (templates/admin/).

Every filter and global the templates use is defined here, once. The environment behaves like the Django engine
where the output could differ: autoescaping on, values marked safe (sanitized Markdown, ``csrf_input``, form fields)
left alone, a missing variable or attribute rendered as "", Django's own filters where a template needs one.
Jinja spells escaped quotes ``&#34;`` and ``&#39;`` where Django writes ``&quot;`` and ``&#x27;``: the same characters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import jinja2
from django.template import defaultfilters
from django.templatetags.static import static
from django.test.signals import template_rendered
from django.urls import reverse
from django.utils import dateformat, formats, timezone
from django.utils.safestring import SafeString
from django.utils.text import slugify as django_slugify

from chats import remote_media, rendering
from chats.db_router import reads_from_primary_fallback
from chats.json_types import JSON, JSONArray, JSONMapping, JSONObject
from chats.roles import request_roles

if TYPE_CHECKING:
    from chats.models import Feedback, InjectedArtifact


class Template(jinja2.Template):
    """A Jinja2 template that announces each page it renders as a Django template does (``template_rendered``).

    Django's test client listens to that signal for ``response.context`` and ``response.templates``, and so do
    debugging tools; without it a Jinja2 page would show neither. Only a page or fragment rendered whole sends it,
    not its includes, and nothing is sent (nor copied) while no one listens.
    """

    def render(self, *args: object, **kwargs: object) -> str:
        if template_rendered.receivers:
            template_rendered.send(sender=self, template=self, context=dict(*args, **kwargs))
        return super().render(*args, **kwargs)


# --------------------------------------------------------------------------------------------------------------
# Django's filters, as the Django engine applies them


def date(value: object, format_string: str = "DATE_FORMAT") -> str:
    """Django's ``date`` filter: Django's formatter, in the current time zone as the Django engine shows datetimes.

    A named format ("DATE_FORMAT", ...) is looked up as the filter does; a literal one goes straight to the
    formatter, without the language lookup that costs more than the formatting itself, once or twice per message.
    """
    if value is None or value == "" or isinstance(value, jinja2.Undefined):
        return ""
    if format_string in formats.FORMAT_SETTINGS:
        format_string = formats.get_format(format_string)
    try:
        return dateformat.format(timezone.template_localtime(value), format_string)  # type: ignore[attr-defined]
    except AttributeError:  # not a date: "" as the Django filter shows it
        return ""


def slugify(value: object) -> str:
    """Django's ``slugify``; a role name that is a slug already ("assistant", "tool") is returned without its
    Unicode normalization and regular expressions, once per message."""
    text = str(value)
    if text.isascii() and text.isalnum() and text.islower():
        return text
    return django_slugify(text)


# --------------------------------------------------------------------------------------------------------------
# The application's filters


def markdown(text: str | None) -> SafeString:
    """Untrusted Markdown as sanitized HTML."""
    return rendering.render_markdown(text or "")


def as_json_or_none(text: str) -> JSONObject | JSONArray | None:
    """Decoded JSON for a tool result that is a JSON object or array (shown pretty-printed), else None."""
    value: JSONObject | JSONArray | None = rendering.json_or_none(text or "")
    return value


def image_source(url: object) -> remote_media.MediaSource:
    """What an image part's URL shows as: an <img>, a placeholder naming its host, or a note (remote_media)."""
    return remote_media.media_source(url, "image")


def audio_source(part: JSONMapping) -> remote_media.MediaSource:
    """An audio part's URL, or its base64 data as a data: URI, decided as image_source decides an image."""
    url = part.get("url")
    if isinstance(url, str):
        return remote_media.media_source(url, "audio")
    data, fmt = part.get("data"), part.get("format") or "wav"
    if isinstance(data, str) and isinstance(fmt, str) and fmt.isalnum():
        return remote_media.media_source(f"data:audio/{fmt};base64,{data}", "audio")
    return remote_media.media_source(None, "audio")


def score_symbol(score: int | None) -> str:
    return {1: "▲", 0: "●", -1: "▼"}.get(score, "") if score is not None else ""


def score_word(score: int | None) -> str:
    return {1: "up", 0: "neutral", -1: "down"}.get(score, "none") if score is not None else "none"


def label_names(feedback: Feedback | None) -> list[str]:
    """The names of a feedback's labels; none for no feedback (a missing value included)."""
    if not feedback:
        return []
    return [label.name for label in feedback.labels.all()]


def size_text(text: str) -> str:
    n = len(text.encode())
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1024 / 1024:.1f} MB"


FLATTEN_DEPTH = 32


def flatten(value: object, prefix: str = "") -> list[tuple[str, str]]:
    """A nested JSON object as (dotted path, leaf value) rows, for a readable record table. Below FLATTEN_DEPTH
    levels a value is shown whole, as JSON: a record is a form's fields, not an arbitrarily deep tree."""
    rows: list[tuple[str, str]] = []

    def walk(node: object, path: str, depth: int) -> None:
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


def artifact_markdown(artifact: InjectedArtifact) -> str:
    """The Markdown body of an injected protocol or discussion, when its payload has one."""
    payload = artifact.payload
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        for key in PROTOCOL_TEXT_KEYS:
            text = payload.get(key)
            if isinstance(text, str):
                return text
    return ""


def artifact_data(artifact: InjectedArtifact) -> JSON:
    """What a record table shows: the record's ``data`` when it has one, else the whole payload."""
    payload: JSON = artifact.payload
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        return payload["data"]
    return payload


# --------------------------------------------------------------------------------------------------------------
# Globals


def url(viewname: str, *args: object, **kwargs: object) -> str:
    """Django's ``{% url %}``: a view's path from its name and arguments."""
    return reverse(viewname, args=args or None, kwargs=kwargs or None)


def qs_join(base: str, **extra: object) -> str:
    """A query string (with its "?") of ``base`` and the ``extra`` parameters that have a value; "" for none."""
    pairs = [(k, v) for k, v in extra.items() if v not in ("", None)]
    tail = urlencode(pairs)
    joined = "&".join(part for part in (base, tail) if part)
    return f"?{joined}" if joined else ""


def bar_chart_layout(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The geometry of a horizontal bar chart (templates/jinja2/chats/_bar_chart.html): one bar per
    (label, ..., count) row, widths proportional to the counts, computed here rather than in template arithmetic."""
    bar_height, gap, label_width, bar_area = 22, 6, 190, 260
    peak = max((row[-1] for row in rows), default=0) or 1
    bars = []
    for index, row in enumerate(rows):
        count = row[-1]
        label = str(row[0])
        width = max(round(bar_area * count / peak), 2 if count else 0)
        bars.append(
            {
                "label": label if len(label) <= 28 else label[:27] + "…",
                "full_label": label,
                "count": count,
                "y": index * (bar_height + gap),
                "text_y": index * (bar_height + gap) + bar_height * 0.7,
                "width": width,
                "count_x": label_width + width + 6,
            }
        )
    return {
        "bars": bars,
        "label_width": label_width,
        "label_x": label_width - 8,
        "width": label_width + bar_area + 60,
        "height": max(len(rows) * (bar_height + gap), bar_height),
        "bar_height": bar_height,
    }


def environment(**options: Any) -> jinja2.Environment:
    """The environment of the ``jinja2`` engine (settings.TEMPLATES)."""
    # Like the Django engine (string_if_invalid = ""), and the same in DEBUG as in production.
    options["undefined"] = jinja2.ChainableUndefined
    options.pop("autoescape", None)
    env = jinja2.Environment(autoescape=True, **options)  # always: the pages show untrusted text
    env.template_class = Template
    env.filters.update(
        {
            # Django's own filters (urlencode replaces Jinja's, to keep "/" as Django does).
            "capfirst": defaultfilters.capfirst,
            "date": date,
            "pluralize": defaultfilters.pluralize,
            "slugify": slugify,
            "truncatechars": defaultfilters.truncatechars,
            "urlencode": defaultfilters.urlencode,
            # The application's.
            "markdown": markdown,
            "pretty_json": rendering.pretty_json,
            "as_json_or_none": as_json_or_none,
            "image_source": image_source,
            "audio_source": audio_source,
            "remote_placeholder": remote_media.placeholder,
            "score_symbol": score_symbol,
            "score_word": score_word,
            "label_names": label_names,
            "size_text": size_text,
            "flatten": flatten,
            "artifact_markdown": artifact_markdown,
            "artifact_data": artifact_data,
        }
    )
    env.globals.update(
        {
            "url": url,
            "static": static,
            "qs_join": qs_join,
            "bar_chart_layout": bar_chart_layout,
            "roles": request_roles,
            "reads_from_primary_fallback": reads_from_primary_fallback,
        }
    )
    return env
