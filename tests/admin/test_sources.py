"""API keys: made from a source's admin page and shown once, stored as a hash only, revoked by an action."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.contrib.auth.models import User
from django.core import serializers
from django.test import Client, TestCase
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import ApiKey, AuditEvent, IngestionReceipt, Source
from chats.services.ingest_queue import receipts_enqueue
from chats.services.sources import api_key_create


def _receipt_status(raw_key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    return client.get(f"/api/v1/receipts/{uuid.uuid4()}/").status_code


def _whole_database_as_text() -> str:
    return "".join(serializers.serialize("json", model._default_manager.all()) for model in apps.get_models())


def _create_key(client: Client, source: Source, name: str = "ci runner") -> tuple[Any, str]:
    response = client.post(f"/admin/chats/source/{source.pk}/create-key/", {"name": name})
    assert response.status_code == 200
    return response, response.context["raw_key"]


def test_the_source_page_offers_to_create_a_key(client: Client, admin_user: User, source: Source) -> None:
    client.force_login(admin_user)

    page = client.get(f"/admin/chats/source/{source.pk}/change/").content.decode()

    assert f'href="/admin/chats/source/{source.pk}/create-key/"' in page


def test_opening_the_create_key_page_makes_no_key(client: Client, admin_user: User, source: Source) -> None:
    client.force_login(admin_user)

    page = client.get(f"/admin/chats/source/{source.pk}/create-key/")

    assert page.status_code == 200
    assert 'method="post"' in page.content.decode()
    assert "csrfmiddlewaretoken" in page.content.decode()
    assert not ApiKey.objects.exists()


def test_creating_a_key_shows_it_once_and_stores_only_its_hash(
    client: Client, admin_user: User, source: Source
) -> None:
    client.force_login(admin_user)

    response, raw_key = _create_key(client, source)

    page = response.content.decode()
    assert raw_key.startswith("mb_")
    assert raw_key in page
    assert "shown this one time only" in page
    assert response["Cache-Control"].count("no-store") >= 1
    key = ApiKey.objects.get()
    assert key.key_hash == hashlib.sha256(raw_key.encode()).hexdigest()
    assert (key.source, key.name) == (source, "ci runner")
    assert raw_key not in _whole_database_as_text()
    event = AuditEvent.objects.get(action="api_key.created")
    assert event.actor == admin_user
    # Shown once: no other admin page shows it again.
    for url in (
        "/admin/chats/apikey/",
        f"/admin/chats/apikey/{key.pk}/change/",
        f"/admin/chats/source/{source.pk}/change/",
    ):
        again = client.get(url).content.decode()
        assert raw_key not in again
        assert key.key_hash not in again


def test_the_shown_key_authenticates_against_the_api(client: Client, admin_user: User, source: Source) -> None:
    client.force_login(admin_user)
    _, raw_key = _create_key(client, source)

    assert _receipt_status(raw_key) == 404  # authenticated: the receipt simply does not exist
    assert _receipt_status(raw_key + "x") == 401
    assert _receipt_status("mb_" + "a" * 43) == 401


def test_creating_a_key_needs_a_csrf_token(admin_user: User, source: Source) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)

    response = client.post(f"/admin/chats/source/{source.pk}/create-key/", {"name": "forged"})

    assert response.status_code == 403
    assert not ApiKey.objects.exists()


def test_a_staff_reviewer_cannot_create_a_key(client: Client, reviewer: User, source: Source) -> None:
    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    client.force_login(reviewer)

    assert client.get(f"/admin/chats/source/{source.pk}/create-key/").status_code == 403
    assert client.post(f"/admin/chats/source/{source.pk}/create-key/", {"name": "x"}).status_code == 403
    assert not ApiKey.objects.exists()


def test_keys_have_no_add_form_and_cannot_be_deleted(client: Client, admin_user: User, ingest_key: str) -> None:
    key = ApiKey.objects.get()
    client.force_login(admin_user)

    listing = client.get("/admin/chats/apikey/").content.decode()

    assert "/admin/chats/apikey/add/" not in listing
    assert client.get("/admin/chats/apikey/add/").status_code == 403
    assert client.post(f"/admin/chats/apikey/{key.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ApiKey.objects.filter(pk=key.pk).exists()


def test_the_key_list_shows_prefix_owner_and_state_but_never_the_hash(
    client: Client, admin_user: User, ingest_key: str, source: Source
) -> None:
    key = ApiKey.objects.get()
    client.force_login(admin_user)

    listing = client.get("/admin/chats/apikey/").content.decode()
    detail = client.get(f"/admin/chats/apikey/{key.pk}/change/").content.decode()

    assert key.prefix in listing
    assert f"source: {source.name}" in listing
    for page in (listing, detail):
        assert key.key_hash not in page
        assert ingest_key not in page


def test_the_revoke_action_revokes_through_the_service(
    client: Client, admin_user: User, ingest_key: str, other_ingest_key: str
) -> None:
    key, other = ApiKey.objects.order_by("pk")
    client.force_login(admin_user)
    assert _receipt_status(ingest_key) == 404

    response = client.post("/admin/chats/apikey/", {"action": "revoke_keys", "_selected_action": [key.pk], "index": 0})

    assert response.status_code == 302
    key.refresh_from_db()
    other.refresh_from_db()
    assert key.is_revoked
    assert not other.is_revoked
    assert _receipt_status(ingest_key) == 401
    assert _receipt_status(other_ingest_key) == 404
    event = AuditEvent.objects.get(action="api_key.revoked")
    assert (event.actor, event.target_id) == (admin_user, str(key.pk))


def test_a_key_made_by_the_service_for_a_user_shows_its_owner(client: Client, admin_user: User, reviewer: User) -> None:
    api_key_create(user=reviewer, name="personal")
    client.force_login(admin_user)

    assert "user: rita" in client.get("/admin/chats/apikey/").content.decode()


def test_the_source_list_shows_each_sources_queued_receipts_and_how_long_the_oldest_has_waited(
    client: Client, admin_user: User, source: Source, other_source: Source
) -> None:
    with TestCase.captureOnCommitCallbacks(execute=False):  # their task is never sent
        receipts = receipts_enqueue(source=source, api_key=None, format=None, contents=[b"{}", b"[]"])
    IngestionReceipt.objects.filter(pk=receipts[0].pk).update(created_at=timezone.now() - timedelta(hours=3))
    client.force_login(admin_user)

    page = client.get("/admin/chats/source/").content.decode()

    rows = {name: page[page.index(f">{name}<") :][:1500] for name in ("masterbrain", "other-logger")}
    assert '<td class="field-queued">2</td>' in rows["masterbrain"]
    assert '<td class="field-oldest_queued">3\xa0hours</td>' in rows["masterbrain"]
    assert '<td class="field-queued">0</td>' in rows["other-logger"]
    assert '<td class="field-oldest_queued">-</td>' in rows["other-logger"]
