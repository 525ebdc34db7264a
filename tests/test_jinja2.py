"""The Jinja2 partials format values exactly as the Django templates around them do."""

from __future__ import annotations

import datetime as dt

import pytest
from django.template import defaultfilters
from django.utils import timezone

from chats import jinja2

MOMENTS = [
    dt.datetime(2026, 11, 30, 9, 5, 7, 123456, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 23, 59, 0, tzinfo=dt.UTC),
]


@pytest.mark.parametrize("format_string", ["c", "Y-m-d H:i", "N j, Y, P"])
@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/Los_Angeles"])
@pytest.mark.parametrize("moment", MOMENTS, ids=["with-microseconds", "leap-day-midnight-edge"])
def test_the_date_filter_matches_django_s(moment: dt.datetime, zone: str, format_string: str) -> None:
    with timezone.override(zone):
        # template_localtime exists in django.utils.timezone but django-stubs does not declare it.
        local = timezone.template_localtime(moment)  # type: ignore[attr-defined]
        expected = defaultfilters.date(local, format_string)

        assert jinja2.date(moment, format_string) == expected


def test_the_date_filter_leaves_a_missing_value_empty() -> None:
    assert jinja2.date(None, "c") == defaultfilters.date(None, "c") == ""
