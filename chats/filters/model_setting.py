"""The ``?model_setting=key=value`` parameter: its parser, and the form field and filter that read it (the
conversation filters declare it; the API's schema documents its pattern)."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms

from chats import strict_json
from chats.storable import unstorable

# ?model_setting=key=value: the longest value read (a setting is a flag, a number or a short name).
MODEL_SETTING_LIMIT = 500
# What the API documents (a key, "=", a value), within the limit: every value of this shape is accepted.
MODEL_SETTING_PATTERN = r"^\s*[^=\s][^=]{0,99}=.{0,300}$"


def parse_model_setting(text: str) -> tuple[str, Any]:
    """``key=value`` as (key, value): the value read as JSON when it is JSON (``true``, ``3``, ``0.3``,
    ``"a string"``), else as the string it is. Raises ValueError, saying why, for anything else."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError("expected key=value, for example enable_thinking=true")
    if len(text) > MODEL_SETTING_LIMIT:
        raise ValueError(f"at most {MODEL_SETTING_LIMIT} characters")
    try:
        value: Any = strict_json.loads(raw)  # strict JSON: no NaN, no number beyond a double
    except ValueError:
        value = raw
    if unstorable(value) is not None:  # compared in the database as jsonb: else as the text it is
        value = raw
    return key, value


class ModelSettingField(forms.CharField):
    """A ``key=value`` setting of the model as given, cleaned to (key, value)."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None or text in self.empty_values:
            return None
        try:
            return parse_model_setting(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not a model setting: {error}.", code="invalid") from error


class ModelSettingFilter(django_filters.Filter):
    field_class = ModelSettingField
