"""axe on the conversation list in the states the demo data does not reach: conversations waiting for their search
vectors (the list says how many), a search saying how many conversations match, and a filter in error; in the
light and the dark theme, as the sweep (test_accessibility_sweep.py) checks every page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from chats.models import Source
from tests import factories
from tests.browser.conftest import sign_in
from tests.browser.test_accessibility_sweep import SETTLE, THEMES, Sweep, axe_script

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_list_with_its_counts_and_an_error_passes_axe_in_both_themes(
    browser: Any, live_server: Any, reviewer: User, source: Source, settings: Any
) -> None:
    for _ in range(3):
        factories.make_conversation(source, n_messages=4, topic="photobleaching")
    context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme="light")
    context.add_init_script(script=axe_script())
    page = context.new_page()
    sign_in(page, live_server.url, "rita")
    sweep = Sweep()
    states = [
        ("/conversations/", "#result-count"),
        ("/conversations/?model_setting=nonsense", "#id_model_setting_error"),
    ]
    if connection.vendor == "postgresql":  # the count comes from the probe of the GIN index
        states.append(("/conversations/?q=photobleaching", "#search-count"))
    for path, shown in states:
        response = page.goto(f"{live_server.url}{path}")
        # An invalid filter is a 400 that shows the page with its error next to the field.
        assert response is not None and response.status == (400 if "nonsense" in path else 200), path
        assert page.locator(shown).count() == 1, (path, shown)
        for theme, rules in THEMES.items():
            page.emulate_media(color_scheme=theme)
            page.evaluate(SETTLE)
            sweep.check(page, "chats:conversation_list", path, theme, rules)
        page.emulate_media(color_scheme="light")
    context.close()
    assert sweep.failures == []
    assert sweep.lesser == []
