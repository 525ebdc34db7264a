"""The list page's results-first layout and saved views on the pages: the chips that remove a filter, the count,
"More filters" open when one of its filters is set, saving the current filters as a view, the views on the list
and their own page, sharing (leads) and deleting."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from chats.models import AuditEvent, SavedView, Source
from chats.services.saved_views import saved_view_create
from tests import factories

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def lead(db: None) -> User:
    user = User.objects.create_user("lena")
    user.groups.add(Group.objects.get(name="Leads"))
    return user


CHIP = re.compile(r'<a class="chip chip-remove" href="([^"]*)">.*?</span><span>([^<]*)</span>')


def test_each_active_filter_is_a_chip_whose_link_removes_it(reviewer: User, source: Source) -> None:
    factories.make_conversation(source, n_messages=2)
    html = signed_in(reviewer).get("/conversations/?status=unreviewed&model=gpt-4o&sort=oldest").content.decode()

    chips = {label: href.replace("&amp;", "&") for href, label in CHIP.findall(html)}
    assert chips == {
        "Review status: Unreviewed": "/conversations/?model=gpt-4o&sort=oldest",
        "Model: gpt-4o": "/conversations/?status=unreviewed&sort=oldest",
        "Order: oldest first": "/conversations/?model=gpt-4o&status=unreviewed",
    }


def test_the_count_says_how_many_conversations_match(reviewer: User, source: Source, other_source: Source) -> None:
    for _ in range(3):
        factories.make_conversation(source, n_messages=2)
    factories.make_conversation(other_source, n_messages=2)
    client = signed_in(reviewer)
    count = re.compile(r'id="result-count">([^<]*)<')

    assert count.search(client.get("/conversations/").content.decode()).group(1) == "4 conversations."  # type: ignore[union-attr]
    filtered = client.get(f"/conversations/?source={other_source.name}").content.decode()
    assert count.search(filtered).group(1) == "1 conversation matches the filters."  # type: ignore[union-attr]


def test_more_filters_is_folded_unless_one_of_its_values_is_refused(reviewer: User, source: Source) -> None:
    client = signed_in(reviewer)
    # Set, it is a chip above the results; the fold stays closed so that the results stay on the first screen.
    assert '<details class="more-filters">' in client.get("/conversations/?tool_name=x").content.decode()
    refused = client.get("/conversations/?date_from=yesterday")
    assert refused.status_code == 400 and '<details class="more-filters" open>' in refused.content.decode()
    # Without JavaScript the form is a plain GET: the main filters and the others are fields of one form.
    html = client.get("/conversations/").content.decode()
    form = html.split('role="search"')[1].split("</form>")[0]
    assert 'name="status"' in form and 'name="tool_name"' in form and 'method="get"' not in form


def test_saving_the_current_filters_and_opening_the_view(reviewer: User, source: Source) -> None:
    factories.make_conversation(source, n_messages=2)
    client = signed_in(reviewer)
    page = client.get("/conversations/?status=unreviewed&sort=oldest").content.decode()
    assert '<input type="hidden" name="query" value="status=unreviewed&amp;sort=oldest">' in page
    assert 'id="view-shared"' not in page  # a reviewer does not share

    response = client.post("/views/new/", {"name": "Mornings", "query": "status=unreviewed&sort=oldest"})

    assert response.status_code == 302 and response["Location"] == "/conversations/?status=unreviewed&sort=oldest"
    listed = client.get(response["Location"]).content.decode()
    assert '<a href="/conversations/?status=unreviewed&amp;sort=oldest" aria-current="page">Mornings</a>' in listed
    assert "Mornings" in client.get("/views/").content.decode()


def test_a_refused_view_is_said_and_nothing_is_saved(reviewer: User) -> None:
    client = signed_in(reviewer)
    saved_view_create(actor=reviewer, name="Mornings", query="")
    response = client.post("/views/new/", {"name": "Mornings", "query": "status=unreviewed"}, follow=True)
    assert response.status_code == 200
    assert "The view was not saved: You already have a view with this name." in response.content.decode()
    assert SavedView.objects.count() == 1


def test_a_lead_shares_and_the_team_sees_it(lead: User, reviewer: User) -> None:
    assert 'id="view-shared"' in signed_in(lead).get("/conversations/").content.decode()
    view = saved_view_create(actor=lead, name="Violations", query="policy=violation")
    assert "Violations" not in signed_in(reviewer).get("/conversations/").content.decode()

    assert signed_in(lead).post(f"/views/{view.uuid}/share/", {"shared": "true"}).status_code == 302

    html = signed_in(reviewer).get("/conversations/").content.decode()
    assert 'href="/conversations/?policy=violation">Violations</a> <span class="muted small">(lena)</span>' in html
    assert AuditEvent.objects.filter(action="saved_view.updated", target_id=str(view.pk)).exists()


def test_deleting_a_view(reviewer: User) -> None:
    view = saved_view_create(actor=reviewer, name="Old", query="")
    assert signed_in(reviewer).post(f"/views/{view.uuid}/delete/").status_code == 302
    assert not SavedView.objects.exists()


@pytest.mark.parametrize("path", ["/views/", "/views/menu/"], ids=["page", "navigation-menu"])
def test_the_views_page_and_menu_take_the_same_queries_for_few_and_many(
    path: str, reviewer: User, lead: User, django_assert_num_queries: object
) -> None:
    client = signed_in(reviewer)
    saved_view_create(actor=reviewer, name="Mine", query="")
    with django_assert_num_queries(4):  # type: ignore[operator]  # session, user, groups, the views
        assert client.get(path).status_code == 200
    for index in range(10):
        saved_view_create(actor=lead, name=f"Team {index}", query="", shared=True)
    with django_assert_num_queries(4):  # type: ignore[operator]
        assert client.get(path).status_code == 200


def test_the_navigation_menu_lists_ones_own_views_then_the_shared_ones(
    reviewer: User, lead: User, other_reviewer: User
) -> None:
    saved_view_create(actor=reviewer, name="Thumbs-down this week", query="score=-1")
    saved_view_create(actor=lead, name="Violations", query="policy=violation", shared=True)
    saved_view_create(actor=other_reviewer, name="Someone else's", query="")

    html = signed_in(reviewer).get("/views/menu/").content.decode()

    links = re.findall(r'<a href="([^"]*)" data-view="[^"]*">([^<]*)', html)
    assert links == [
        ("/conversations/?score=-1", "Thumbs-down this week"),
        ("/conversations/?policy=violation", "Violations "),
    ]
    assert "(shared by lena)" in html
    assert "Someone else" not in html
    assert 'href="/views/">All saved views</a>' in html


def test_every_page_offers_the_menu_without_querying_the_views(reviewer: User) -> None:
    saved_view_create(actor=reviewer, name="Mine", query="score=-1")
    html = signed_in(reviewer).get("/views/").content.decode()
    nav = html[html.index('<nav class="site-nav"') : html.index("</nav>")]
    assert 'data-menu-url="/views/menu/"' in nav
    assert "Mine" not in nav  # loaded when the menu is first opened, not with the page
    assert 'href="/views/" aria-current="page">All saved views</a>' in nav  # the way in without JavaScript
