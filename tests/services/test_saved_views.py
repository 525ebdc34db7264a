"""Saved views (chats.services.saved_views): a name unique per owner, the list's own filters checked and kept in
one order, only the owner changes a view, and only leads share one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from chats.errors import InvalidInput, NotAllowed
from chats.models import SavedView
from chats.selectors.saved_views import saved_views_read
from chats.services.saved_views import saved_view_create, saved_view_delete, saved_view_query, saved_view_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(db: None) -> User:
    user = User.objects.create_user("lena")
    user.groups.add(Group.objects.get(name="Leads"))
    return user


def _paths(error: pytest.ExceptionInfo[InvalidInput]) -> list[str]:
    return [item["path"] for item in error.value.errors]


def test_the_query_keeps_the_lists_filters_and_order_in_one_spelling() -> None:
    assert saved_view_query("?sort=oldest&after=abc&score=-1&model=gpt-4o&q=") == "model=gpt-4o&score=-1&sort=oldest"
    assert saved_view_query("") == ""


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("colour=blue", "/query/colour"),
        ("score=down", "/query/score"),
        ("sort=sideways", "/query/sort"),
        ("date_from=yesterday", "/query/date_from"),
        ("model=a%00b", "/query/model"),
    ],
)
def test_a_query_the_list_would_refuse_is_refused_naming_the_parameter(query: str, path: str) -> None:
    with pytest.raises(InvalidInput) as error:
        saved_view_query(query)
    assert _paths(error) == [path]


def test_a_name_is_unique_per_owner_not_across_owners(reviewer: User, other_reviewer: User) -> None:
    saved_view_create(actor=reviewer, name="Mornings", query="status=unreviewed")
    with pytest.raises(InvalidInput) as error:
        saved_view_create(actor=reviewer, name="Mornings", query="score=-1")
    assert _paths(error) == ["/name"]
    saved_view_create(actor=other_reviewer, name="Mornings", query="score=-1")
    assert SavedView.objects.count() == 2


@pytest.mark.parametrize("name", ["", "   ", "x" * 81, "a\x00b"])
def test_a_name_must_be_storable_and_short(reviewer: User, name: str) -> None:
    with pytest.raises(InvalidInput) as error:
        saved_view_create(actor=reviewer, name=name, query="")
    assert _paths(error) == ["/name"]


def test_only_leads_share(reviewer: User, lead: User) -> None:
    with pytest.raises(NotAllowed):
        saved_view_create(actor=reviewer, name="Mine", query="", shared=True)
    own = saved_view_create(actor=reviewer, name="Mine", query="")
    with pytest.raises(NotAllowed):
        saved_view_update(actor=reviewer, view=own, shared=True)
    shared = saved_view_create(actor=lead, name="Team", query="score=-1", shared=True)
    assert SavedView.objects.get(pk=shared.pk).shared


def test_only_the_owner_changes_or_deletes_a_view(reviewer: User, lead: User) -> None:
    shared = saved_view_create(actor=lead, name="Team", query="score=-1", shared=True)
    with pytest.raises(NotAllowed):
        saved_view_update(actor=reviewer, view=shared, name="Mine now")
    with pytest.raises(NotAllowed):
        saved_view_delete(actor=reviewer, view=shared)
    assert SavedView.objects.get().name == "Team"


def test_each_person_sees_their_own_views_and_the_shared_ones(
    reviewer: User, other_reviewer: User, lead: User, django_assert_num_queries: object
) -> None:
    saved_view_create(actor=reviewer, name="Rita's", query="")
    saved_view_create(actor=other_reviewer, name="Oscar's", query="")
    saved_view_create(actor=lead, name="Team", query="", shared=True)
    saved_view_create(actor=lead, name="Lena's", query="")
    with django_assert_num_queries(1):  # type: ignore[operator]
        views = saved_views_read(reviewer)
        assert [v.name for v in views.mine] == ["Rita's"]
        assert [(v.name, v.owner.username) for v in views.shared] == [("Team", "lena")]
