"""The conversation list in a real browser: results first at 1400x1000 and 1280x720 (the first row of results on the
first screen, in both themes, with filters set as chips and saved views listed), the chips removing a filter, and
saved views: a lead saves the current filters and shares them, a reviewer opens the view from the navigation and
gets the same URL, and the same rows, as setting its filters."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group, User

from chats.models import SavedView, Source
from chats.services.saved_views import saved_view_create
from tests import factories
from tests.browser.conftest import PASSWORD, Problems, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _lead() -> User:
    user = User.objects.create_user("lena", password=PASSWORD)
    user.groups.add(Group.objects.get(name="Leads"))
    return user


def _first_row_on_screen(page: Any, height: int) -> None:
    row = page.locator("table.conversations tbody tr").first
    box = row.bounding_box()
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, (box, height)


@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (1280, 720)])
def test_the_first_result_row_is_on_the_first_screen(
    browser: Any, live_server: Any, reviewer: User, source: Source, width: int, height: int
) -> None:
    for number in range(12):
        factories.make_conversation(source, n_messages=3, title=f"Gel run {number}", model="gpt-4o")
    lead = _lead()
    lead.groups.add(Group.objects.get(name="Reviewers"))  # the widest head row: every menu
    for name in ("Thumbs down this week", "Policy violations, unreviewed", "Long tool runs"):
        saved_view_create(actor=lead, name=name, query="model=gpt-4o", shared=True)
    for theme in ("light", "dark"):
        context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=theme)
        page = context.new_page()
        sign_in(page, live_server.url, "lena")
        for path in ("/conversations/", "/conversations/?model=gpt-4o&status=unreviewed&sort=oldest"):
            page.goto(f"{live_server.url}{path}")
            _first_row_on_screen(page, height)
        assert page.locator("#result-count").inner_text() == "12 conversations match the filters."
        context.close()


def test_a_chip_removes_its_filter(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    factories.make_conversation(source, n_messages=3, model="gpt-4o")
    factories.make_conversation(source, n_messages=3, model="claude")
    sign_in(page, live_server.url, "rita", next_path="/conversations/?model=gpt-4o")
    assert page.locator("table.conversations tbody tr").count() == 1
    page.get_by_role("link", name="Remove the filter Model: gpt-4o").click()
    page.wait_for_url(re.compile(r"/conversations/$"))
    assert page.locator("table.conversations tbody tr").count() == 2
    assert page.locator("#result-count").inner_text() == "2 conversations."


def test_a_lead_saves_and_shares_a_view_and_a_reviewer_opens_it(
    browser: Any, live_server: Any, reviewer: User, source: Source
) -> None:
    for _ in range(2):
        factories.make_conversation(source, n_messages=3, model="gpt-4o")
    factories.make_conversation(source, n_messages=3, model="claude")
    _lead()
    filters = "/conversations/?model=gpt-4o&sort=oldest"

    lead_page = browser.new_context().new_page()
    sign_in(lead_page, live_server.url, "lena", next_path=quote(filters))
    lead_page.get_by_text("Save view…").click()
    lead_page.get_by_label("Name of the view").fill("GPT-4o, oldest first")
    lead_page.get_by_label("Share with the team").check()
    lead_page.get_by_role("button", name="Save view").click()
    lead_page.wait_for_url(re.compile(r"model=gpt-4o&sort=oldest$"))
    assert "saved and shared with the team" in lead_page.locator(".flash").inner_text()
    view = SavedView.objects.get()
    assert (view.shared, view.query) == (True, "model=gpt-4o&sort=oldest")

    page = browser.new_context().new_page()
    sign_in(page, live_server.url, "rita")
    # The navigation's Views menu loads the views when it is opened, and lists the shared one.
    navigation = page.get_by_role("navigation", name="Main")
    navigation.get_by_text("Views", exact=True).click()
    navigation.get_by_role("link", name="GPT-4o, oldest first").click()
    page.wait_for_url(re.compile(r"/conversations/\?model=gpt-4o&sort=oldest$"))
    opened = [row.inner_text() for row in page.locator("table.conversations tbody tr").all()]
    page.goto(f"{live_server.url}{filters}")
    assert [row.inner_text() for row in page.locator("table.conversations tbody tr").all()] == opened
    assert len(opened) == 2
    # The reviewer's own copy of the same filters: saved, personal (no sharing offered to a reviewer).
    page.get_by_text("Save view…").click()
    assert page.get_by_label("Share with the team").count() == 0
    page.get_by_label("Name of the view").fill("Mine")
    page.get_by_role("button", name="Save view").click()
    page.wait_for_url(re.compile(r"model=gpt-4o"))
    assert page.locator("#saved-views").get_by_role("link", name="Mine").get_attribute("aria-current") == "page"
