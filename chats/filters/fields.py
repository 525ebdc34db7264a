"""The fields and filters the FilterSets share: a strict boolean, a choice that accepts aliases, the form that
refuses unstorable values before any field reads them, and the start of a UTC calendar day."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django import forms
from django.db.models import Q

from chats.storable import unstorable
from chats.widgets import FilterForm

BOOLEAN_CHOICES = [("", "Any"), ("true", "Yes"), ("false", "No")]
# What a boolean filter accepts, as documented: anything else is an error naming the parameter (Django's own
# boolean fields read an unknown word as "no filter", so ?has_tool_calls=no would list everything).
BOOLEAN_VALUES = {"true": True, "1": True, "false": False, "0": False}


class StrictBooleanField(forms.Field):
    """`true`/`false` (or `1`/`0`) as a bool, empty as None (no filter); any other value is invalid."""

    widget = forms.Select(choices=BOOLEAN_CHOICES)

    def to_python(self, value: object) -> bool | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in BOOLEAN_VALUES:
            return BOOLEAN_VALUES[value]
        raise forms.ValidationError("Must be true or false (or 1 or 0).", code="invalid")

    def validate(self, value: object) -> None:
        if value is None and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class StorableFilterForm(FilterForm):
    """A filter form whose values are first checked to be storable (`chats.storable`): a NUL or an unpaired
    surrogate is refused, naming the parameter, before any field reads the value (a choice read from the database
    would fail on it, and a rule's or an export job's filters are stored as JSON)."""

    def full_clean(self) -> None:
        refused = {}
        if self.is_bound:
            for name in self.fields:
                found = unstorable(self[name].data)
                if found is not None:
                    refused[name] = found.reason
        if not refused:
            super().full_clean()
            return
        fields = self.fields
        self.fields = {name: field for name, field in fields.items() if name not in refused}
        try:
            super().full_clean()
        finally:
            self.fields = fields
        for name, reason in refused.items():
            self.add_error(name, f"Not a value that can be stored: {reason}.")


class AliasedChoiceField(django_filters.fields.ChoiceField):
    """A choice field that also accepts the aliases of its choices, read as the choice they stand for."""

    def __init__(self, *args: object, aliases: dict[str, str], **kwargs: object) -> None:
        self.aliases = aliases
        super().__init__(*args, **kwargs)

    def to_python(self, value: Any) -> Any:
        value = super().to_python(value)
        return self.aliases.get(value, value)


class AliasedChoiceFilter(django_filters.ChoiceFilter):
    field_class = AliasedChoiceField


def start_of(day: dt.date) -> dt.datetime:
    """The first instant of a calendar day, in UTC (the date filters' bounds)."""
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def on_or_after(field: str, day: dt.date) -> Q:
    """`field` on `day` (a UTC calendar day) or later."""
    return Q(**{f"{field}__gte": start_of(day)})


def on_or_before(field: str, day: dt.date) -> Q:
    """`field` on `day` (a UTC calendar day) or earlier. Inclusive: everything before the start of the next day
    (the calendar's last day has none: no bound)."""
    if day >= dt.date.max:
        return Q()
    return Q(**{f"{field}__lt": start_of(day + dt.timedelta(days=1))})


class DayFilter(django_filters.DateFilter):
    """A UTC calendar day, picked with the browser's date picker."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.DateInput(attrs={"type": "date"}))
        super().__init__(**kwargs)


# A search's text is bounded before any of it is read (chats.selectors.search bounds the words it probes).
SEARCH_MAX_CHARS = 500


class SearchField(forms.CharField):
    """Web-search text, of at most SEARCH_MAX_CHARS characters."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=SEARCH_MAX_CHARS, **kwargs)


class SearchFilter(django_filters.CharFilter):
    field_class = SearchField
