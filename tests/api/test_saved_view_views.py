"""The saved views API (`/api/v1/views/`): a person's own views and the shared ones, in a constant number of
queries; errors name the field; opening a view is the list's URL, and a view naming a source the caller may not
read shows nothing of that source."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from chats.models import SavedView, Source
from chats.services.saved_views import saved_view_create
from tests import factories

pytestmark = pytest.mark.django_db


def person(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def _post(client: APIClient, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def lead(db: None) -> User:
    user = User.objects.create_user("lena")
    user.groups.add(Group.objects.get(name="Leads"))
    return user


def test_a_view_is_saved_and_read_back_with_its_url(reviewer: User) -> None:
    response = _post(person(reviewer), "/api/v1/views/", {"name": "Down on 4o", "query": "score=-1&model=gpt-4o"})

    assert response.status_code == 201
    body = response.json()
    assert body["query"] == "model=gpt-4o&score=-1"
    assert body["url"] == "/conversations/?model=gpt-4o&score=-1"
    assert (body["owner"], body["mine"], body["shared"]) == ("rita", True, False)
    assert person(reviewer).get(f"/api/v1/views/{body['uuid']}/").json() == body


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"query": "score=-1"}, "/name"),
        ({"name": "x", "query": "nonsense=1"}, "/query/nonsense"),
        ({"name": "x", "shared": "perhaps"}, "/shared"),
        ({"name": "x\ud800"}, "/name"),
    ],
)
def test_a_refused_view_names_the_field(reviewer: User, body: dict[str, Any], path: str) -> None:
    response = _post(person(reviewer), "/api/v1/views/", body)
    assert response.status_code == 400
    assert [error["path"] for error in response.json()["errors"]] == [path]
    assert not SavedView.objects.exists()


def test_a_reviewer_may_not_share_and_a_lead_may(reviewer: User, lead: User) -> None:
    refused = _post(person(reviewer), "/api/v1/views/", {"name": "Team", "shared": True})
    assert refused.status_code == 403 and refused.json()["errors"][0]["path"] == "/shared"
    assert _post(person(lead), "/api/v1/views/", {"name": "Team", "shared": True}).status_code == 201


def test_the_list_holds_mine_and_the_shared_ones_in_constant_queries(
    reviewer: User, other_reviewer: User, lead: User, django_assert_num_queries: Any
) -> None:
    client = person(reviewer)

    def listed() -> list[tuple[str, bool]]:
        # session, user, groups, the views with their owners
        with django_assert_num_queries(4):
            response = client.get("/api/v1/views/")
        return [(view["name"], view["mine"]) for view in response.json()]

    saved_view_create(actor=reviewer, name="A mine", query="")
    saved_view_create(actor=lead, name="B shared", query="", shared=True)
    saved_view_create(actor=other_reviewer, name="C oscar's", query="")
    assert listed() == [("A mine", True), ("B shared", False)]
    for index in range(10):
        saved_view_create(actor=lead, name=f"Team {index}", query="score=-1", shared=True)
    assert len(listed()) == 12


def test_someone_elses_personal_view_does_not_exist_and_a_shared_one_is_read_only(
    reviewer: User, other_reviewer: User, lead: User
) -> None:
    personal = saved_view_create(actor=other_reviewer, name="Oscar's", query="")
    shared = saved_view_create(actor=lead, name="Team", query="", shared=True)
    client = person(reviewer)

    assert client.get(f"/api/v1/views/{personal.uuid}/").status_code == 404
    assert client.get(f"/api/v1/views/{shared.uuid}/").status_code == 200
    patch = client.patch(
        f"/api/v1/views/{shared.uuid}/", data=json.dumps({"name": "Mine"}), content_type="application/json"
    )
    assert patch.status_code == 403
    assert client.delete(f"/api/v1/views/{shared.uuid}/").status_code == 403
    assert SavedView.objects.get(pk=shared.pk).name == "Team"


def test_a_source_key_has_no_views(ingest_key: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {ingest_key}")
    assert client.get("/api/v1/views/").status_code == 403


def test_a_view_naming_a_source_the_caller_may_not_read_shows_nothing_of_it(
    lead: User, source: Source, other_source: Source, other_ingest_key: str, reviewer: User
) -> None:
    """The view's query is the list's own: whoever opens it gets what the list's source permissions allow. A key of
    another source reading with a shared view's filters sees none of the named source's conversations."""
    factories.make_conversation(source, title="Masterbrain's")
    factories.make_conversation(other_source, title="Other logger's")
    view = saved_view_create(actor=lead, name="Masterbrain", query=f"source={source.name}", shared=True)

    on_the_page = person(reviewer).get(view.get_absolute_url())
    assert [c.title for c in on_the_page.context["page"].conversations] == ["Masterbrain's"]

    key = APIClient()
    key.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    response = key.get(f"/api/v1/conversations/?{view.query}")
    titles = [c["title"] for c in response.json().get("results", [])] if response.status_code == 200 else []
    assert response.status_code in (200, 400) and "Masterbrain's" not in titles
