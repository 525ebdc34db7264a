"""The filter forms' widgets (chats/widgets.py): drawn by Jinja2 in one loop, with Django's own markup."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms.renderers import DjangoTemplates

from chats.filters.conversations import ConversationFilter
from chats.models import Conversation, Source
from tests import factories


@pytest.mark.parametrize(
    "data",
    [
        None,
        {
            "source": "masterbrain",
            "has_warnings": ["orphan_result", "any"],
            "date_from": "2026-01-01",
            "model": 'qwen "3" <plus> & more',
            "label": "no-such-label",
            "has_tool_calls": "true",
            "model_setting": "not a setting",
            "q": "annealing",
        },
    ],
)
def test_the_filter_form_draws_every_widget_as_django_does(source: Source, data: Any) -> None:
    factories.make_labels("helpful", "wrong <answer>")
    filterset = ConversationFilter(data, queryset=Conversation.objects.all())
    filterset.is_valid()
    django = DjangoTemplates()
    for field in filterset.form:
        fast = str(field)
        field.form.renderer = django
        slow = str(field)
        field.form.renderer = type(filterset.form).default_renderer
        # Django's includes leave blank lines; Jinja2 spells escaped quotes &#34; and &#39;.
        assert _normal(fast) == _normal(slow), field.name


def _normal(html: str) -> str:
    html = html.replace("&#34;", "&quot;").replace("&#39;", "&#x27;")
    return "\n".join(line for line in html.splitlines() if line.strip())
