"""Form widgets drawn fast: the filter forms of the list pages render a dozen selects on every request."""

from __future__ import annotations

from typing import Any

import jinja2
from django import forms
from django.conf import settings
from django.forms.renderers import DjangoTemplates


class _JinjaWidget:
    """A Jinja2 template as the form renderer calls it (``render(context, request)``)."""

    def __init__(self, template: jinja2.Template) -> None:
        self.template = template

    def render(self, context: dict[str, Any] | None = None, request: object = None) -> str:
        return self.template.render(context or {})


class WidgetRenderer(DjangoTemplates):
    """Django's form renderer, but with <select> and <input> widgets drawn by Jinja2 templates
    (templates/jinja2/chats/widgets/) that list every option in one loop. Django's own select includes a template
    per option, attributes included, which made the conversation list's filter form (a dozen selects) a third of
    the page's time. The output is Django's, attribute for attribute; other widgets keep Django's templates.

    A plain Jinja2 environment of its own: a widget is not a page, and is not announced as one (chats.jinja2)."""

    JINJA_TEMPLATES = {
        **{f"django/forms/widgets/{kind}.html": "chats/widgets/input.html" for kind in ("input", "text", "date")},
        "django/forms/widgets/select.html": "chats/widgets/select.html",
    }

    def __init__(self) -> None:
        self.jinja = jinja2.Environment(
            loader=jinja2.FileSystemLoader(settings.BASE_DIR / "templates" / "jinja2"),
            autoescape=True,
            auto_reload=settings.DEBUG,
        )

    def get_template(self, template_name: str) -> Any:
        if template_name in self.JINJA_TEMPLATES:
            return _JinjaWidget(self.jinja.get_template(self.JINJA_TEMPLATES[template_name]))
        return super().get_template(template_name)


class FilterForm(forms.Form):
    """The form of a FilterSet shown on a page (its Meta.form): widgets drawn by WidgetRenderer."""

    default_renderer = WidgetRenderer()
