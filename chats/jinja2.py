"""The Jinja2 environment of the partials repeated once per message (templates/jinja2/).

A 1,000-message thread renders several partials per message; the Django template engine spends about a
millisecond on each message, Jinja2 (compiled to Python) a fraction of it. The page itself stays a Django template
and renders these partials through ``{% jinja_include %}``; the htmx fragments render the same files.

The environment behaves like the Django engine where the output could differ: autoescaping on, values marked safe
(sanitized Markdown, ``csrf_input``) left alone, a missing variable or attribute rendered as "", the same filters.
Jinja spells escaped quotes ``&#34;`` and ``&#39;`` where Django writes ``&quot;`` and ``&#x27;``: the same characters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.template import defaultfilters
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify as django_slugify
from jinja2 import ChainableUndefined, Environment

from chats.templatetags import chats_tags

# The formats the partials use most, written directly: Django's formatter parses the format string on every call.
_DATE_FORMATS = {
    "c": lambda moment: moment.isoformat(),
    "Y-m-d H:i": lambda moment: moment.strftime("%Y-%m-%d %H:%M"),
}


def date(value: Any, format_string: str) -> str:
    """Django's ``date`` filter, in the current time zone as the Django engine shows datetimes."""
    local = timezone.template_localtime(value)  # type: ignore[attr-defined]
    fast = _DATE_FORMATS.get(format_string)
    if fast is not None and isinstance(local, datetime):
        return str(fast(local))
    return defaultfilters.date(local, format_string)  # type: ignore[attr-defined]


def slugify(value: Any) -> str:
    """Django's ``slugify``; a role name that is a slug already ("assistant", "tool") is returned without its
    Unicode normalization and regular expressions, once per message."""
    text = str(value)
    if text.isascii() and text.isalnum() and text.islower():
        return text
    return django_slugify(text)


def url(viewname: str, *args: Any) -> str:
    return reverse(viewname, args=args)


def environment(**options: Any) -> Environment:
    # Like the Django engine (string_if_invalid = ""), and the same in DEBUG as in production.
    options["undefined"] = ChainableUndefined
    options.pop("autoescape", None)
    env = Environment(autoescape=True, **options)  # always: the partials show untrusted text
    env.filters.update(
        {
            # Django's own filters the partials use (urlencode replaces Jinja's, to keep "/" as Django does).
            "capfirst": defaultfilters.capfirst,
            "date": date,
            "slugify": slugify,
            "truncatechars": defaultfilters.truncatechars,
            "urlencode": defaultfilters.urlencode,
            # The project's filters, the same functions as the Django engine's.
            "markdown": chats_tags.markdown,
            "pretty_json": chats_tags.pretty_json,
            "as_json_or_none": chats_tags.as_json_or_none,
            "safe_image_src": chats_tags.safe_image_src,
            "audio_data_uri": chats_tags.audio_data_uri,
            "score_symbol": chats_tags.score_symbol,
            "score_word": chats_tags.score_word,
            "label_names": chats_tags.label_names,
            "size_text": chats_tags.size_text,
            "flatten": chats_tags.flatten,
            "artifact_markdown": chats_tags.artifact_markdown,
            "artifact_data": chats_tags.artifact_data,
        }
    )
    env.globals.update({"url": url, "qs_join": chats_tags.qs_join})
    return env
