"""The audit table's saved view paths (chats.services.saved_views): saving a view from the list page or the API,
changing it (renaming, new filters, sharing) and deleting it each write one event. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import SavedView, Source
from chats.services.saved_views import saved_view_create
from tests.security.audit_paths import World, WritePath, check_write_path, declared_in, expect, make_world, write_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


def _values(view: SavedView, **changes: Any) -> dict[str, Any]:
    return {"name": view.name, "query": view.query, "shared": view.shared, "owner": view.owner_id, **changes}


def _created(owner: User, name: str = "Thumbs down", query: str = "score=-1") -> tuple[SavedView, dict[str, Any]]:
    view = saved_view_create(actor=owner, name=name, query=query)
    return view, expect("saved_view.created", owner, "saved_view", view.pk, after=_values(view))


@write_path("POST chats:saved_view_create", "service saved_view_create")
def page_saves_the_lists_filters_as_a_view(w: World) -> list[dict[str, Any]]:
    response = w.page(w.reviewer).post(
        "/views/new/", {"name": "Unreviewed tools", "query": "status=unreviewed&has_tool_calls=true&sort=oldest"}
    )
    view = SavedView.objects.get(name="Unreviewed tools")
    assert response.status_code == 302 and response["Location"] == view.get_absolute_url()
    # Kept in the list's own order of parameters, whatever order they came in.
    after = {"name": "Unreviewed tools", "query": "has_tool_calls=true&status=unreviewed&sort=oldest", "shared": False}
    return [expect("saved_view.created", w.reviewer, "saved_view", view.pk, after={**after, "owner": w.reviewer.pk})]


@write_path("POST chats:saved_view_share", "service saved_view_update")
def page_shares_a_leads_view(w: World) -> list[dict[str, Any]]:
    view, created = _created(w.admin)  # a superuser leads
    response = w.page(w.admin).post(f"/views/{view.uuid}/share/", {"shared": "true"})
    assert response.status_code == 302
    return [
        created,
        expect("saved_view.updated", w.admin, "saved_view", view.pk, before={"shared": False}, after={"shared": True}),
    ]


@write_path("POST chats:saved_view_delete", "service saved_view_delete")
def page_deletes_a_view(w: World) -> list[dict[str, Any]]:
    view, created = _created(w.reviewer)
    response = w.page(w.reviewer).post(f"/views/{view.uuid}/delete/")
    assert response.status_code == 302 and not SavedView.objects.exists()
    return [created, expect("saved_view.deleted", w.reviewer, "saved_view", view.pk, before=_values(view))]


@write_path("POST api:saved-view-list", "service saved_view_create")
def api_saves_a_view(w: World) -> list[dict[str, Any]]:
    body = {"name": "Violations", "query": "?policy=violation"}
    response = w.api(w.admin).post(
        "/api/v1/views/", data=json.dumps({**body, "shared": True}), content_type="application/json"
    )
    assert response.status_code == 201, response.json()
    view = SavedView.objects.get()
    after = {"name": "Violations", "query": view.query, "shared": True, "owner": w.admin.pk}
    return [expect("saved_view.created", w.admin, "saved_view", view.pk, after=after)]


@write_path("PATCH api:saved-view-detail", "service saved_view_update")
def api_renames_a_view(w: World) -> list[dict[str, Any]]:
    view, created = _created(w.reviewer)
    response = w.api(w.reviewer).patch(
        f"/api/v1/views/{view.uuid}/", data=json.dumps({"name": "Down"}), content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["name"] == "Down"
    updated = expect(
        "saved_view.updated", w.reviewer, "saved_view", view.pk, before={"name": "Thumbs down"}, after={"name": "Down"}
    )
    return [created, updated]


@write_path("PUT api:saved-view-detail", "service saved_view_update")
def api_replaces_a_views_filters(w: World) -> list[dict[str, Any]]:
    view, created = _created(w.reviewer)
    body = {"name": "Thumbs down", "query": "score=-1&status=unreviewed"}
    response = w.api(w.reviewer).put(
        f"/api/v1/views/{view.uuid}/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200
    before, after = {"query": "score=-1"}, {"query": "status=unreviewed&score=-1"}
    return [created, expect("saved_view.updated", w.reviewer, "saved_view", view.pk, before=before, after=after)]


@write_path("DELETE api:saved-view-detail", "service saved_view_delete")
def api_deletes_a_view(w: World) -> list[dict[str, Any]]:
    view, created = _created(w.reviewer)
    response = w.api(w.reviewer).delete(f"/api/v1/views/{view.uuid}/")
    assert response.status_code == 204
    return [created, expect("saved_view.deleted", w.reviewer, "saved_view", view.pk, before=_values(view))]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
