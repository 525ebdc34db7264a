"""The Trends page in Chromium: axe finds nothing in either theme, the chart's columns are reached by keyboard, and
following a point leads to a list of exactly as many conversations as the point says."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Source
from tests.browser.conftest import Problems, sign_in
from tests.browser.test_given_panel import axe_violations
from tests.test_views_trends import _world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_following_a_trends_point_lists_as_many_conversations_as_it_says(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    _world(source, scale=2)
    sign_in(page, live_server.url, "rita", "/trends/?bucket=week&periods=4")
    for theme in ("light", "dark"):
        page.emulate_media(color_scheme=theme)
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        assert axe_violations(page) == [], theme
    page.emulate_media(color_scheme="light")

    # The first column of the "by model" chart, reached with the keyboard.
    point = page.locator("#trend-model-title ~ svg a.trend-link").first
    label = point.get_attribute("aria-label")
    assert label is not None
    value = int(re.search(r": (\d+) conversation", label).group(1))  # type: ignore[union-attr]
    point.focus()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == label
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/conversations/\?"))
    assert page.locator("a.row-link").count() == value
    problems.assert_none()
