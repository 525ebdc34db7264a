"""The admin shows what came in: a key's bytes today against its daily quota, a receipt's payload (decoded, and its
exact bytes to download), and removes old payloads of selected receipts through the retention service."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import ApiKey, AuditEvent, IngestionReceipt, ReceiptPayload

pytestmark = pytest.mark.django_db

DOCUMENT = {"conversation_id": "admin-1", "chat_history": [{"role": "user", "content": "Why <b>two</b> bands?"}]}


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def send(client: APIClient, body: bytes) -> str:
    response = client.post("/api/v1/ingest/", data=body, content_type="application/json")
    return str(response.json()["receipt"])


def test_the_api_key_page_shows_the_bytes_sent_today_against_the_daily_quota(
    ingest_client: APIClient, ingest_key: str, admin_user: User, settings: Any
) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = 1_000_000
    body = json.dumps(DOCUMENT).encode()
    send(ingest_client, body)
    send(ingest_client, body)
    key = ApiKey.objects.get(key_hash=ApiKey.hash_key(ingest_key))
    admin = signed_in(admin_user)

    page = admin.get(f"/admin/chats/apikey/{key.pk}/change/").content.decode()
    listed = admin.get("/admin/chats/apikey/").content.decode()

    used = 2 * len(body)
    assert f"({used} bytes)" in page and "of 976.6\xa0KB (1000000 bytes)" in page
    assert f"{round(100 * used / 1_000_000, 1)}% used" in page
    assert f"<td>{used}\xa0bytes ({used})</td>" in page  # today's row in the last days
    assert f"{used}\xa0bytes" in listed  # the list's "sent today"


def test_the_api_key_page_says_when_no_quota_is_set(ingest_key: str, admin_user: User, settings: Any) -> None:
    settings.MASTERBRAIN_KEY_DAILY_BYTES = 0
    key = ApiKey.objects.get(key_hash=ApiKey.hash_key(ingest_key))

    page = signed_in(admin_user).get(f"/admin/chats/apikey/{key.pk}/change/").content.decode()

    assert "no daily quota is set" in page and "Nothing sent in the last 7 days" in page


def test_a_receipt_page_shows_its_json_payload_escaped_and_links_to_the_exact_bytes(
    ingest_client: APIClient, admin_user: User
) -> None:
    body = json.dumps(DOCUMENT, indent=4).encode()
    receipt = IngestionReceipt.objects.get(uuid=send(ingest_client, body))
    admin = signed_in(admin_user)

    page = admin.get(f"/admin/chats/ingestionreceipt/{receipt.pk}/change/").content.decode()
    download = admin.get(f"/admin/chats/ingestionreceipt/{receipt.pk}/payload/")

    assert "Why &lt;b&gt;two&lt;/b&gt; bands?" in page and "<b>two</b>" not in page
    assert f'href="/admin/chats/ingestionreceipt/{receipt.pk}/payload/"' in page
    assert download.status_code == 200 and download["Content-Type"] == "application/octet-stream"
    assert download.content == body


def test_the_page_of_a_receipt_rejected_for_a_lone_surrogate_shows_it_escaped(
    ingest_client: APIClient, admin_user: User
) -> None:
    body = b'{"conversation_id": "odd", "chat_history": [{"role": "user", "content": "bad \\ud800"}]}'
    receipt = IngestionReceipt.objects.get(uuid=send(ingest_client, body))
    assert receipt.outcome == "rejected"
    admin = signed_in(admin_user)

    response = admin.get(f"/admin/chats/ingestionreceipt/{receipt.pk}/change/")
    payload = admin.get(f"/admin/chats/receiptpayload/{receipt.payload_sha256}/change/")

    assert response.status_code == 200 and payload.status_code == 200
    assert "bad \\ud800" in response.content.decode() and "bad \\ud800" in payload.content.decode()
    assert admin.get(f"/admin/chats/ingestionreceipt/{receipt.pk}/payload/").content == body


def test_a_receipt_page_shows_a_body_that_is_not_utf8_as_text_with_escapes(
    ingest_client: APIClient, admin_user: User
) -> None:
    receipt = IngestionReceipt.objects.get(uuid=send(ingest_client, b'{"content": "caf\xe9"}'))

    page = signed_in(admin_user).get(f"/admin/chats/ingestionreceipt/{receipt.pk}/change/").content.decode()

    assert "Not JSON" in page and "{&quot;content&quot;: &quot;caf\\xe9&quot;}" in page


def _ingest_and_age(client: APIClient, *ids: str, days: int) -> list[IngestionReceipt]:
    receipts = []
    for external_id in ids:
        uuid = send(client, json.dumps({**DOCUMENT, "conversation_id": external_id}).encode())
        receipts.append(IngestionReceipt.objects.get(uuid=uuid))
    IngestionReceipt.objects.filter(pk__in=[r.pk for r in receipts]).update(
        created_at=timezone.now() - timedelta(days=days)
    )
    return receipts


def test_the_prune_action_counts_first_then_removes_the_old_payloads_of_the_selected_receipts_only(
    ingest_client: APIClient, admin_user: User
) -> None:
    old, old_unselected = _ingest_and_age(ingest_client, "old", "old-unselected", days=40)
    (recent,) = _ingest_and_age(ingest_client, "recent", days=2)
    admin = signed_in(admin_user)
    selection = {"action": "prune_payloads", "_selected_action": [old.pk, recent.pk], "index": "0"}

    counted = admin.post("/admin/chats/ingestionreceipt/", selection)

    assert counted.status_code == 200
    assert 'value="30"' not in counted.content.decode()  # retention is off: the form starts at 0 days
    assert "2 receipts created before" in counted.content.decode()  # 0 days: both selected ones
    # The page posts itself again (without the list's "index"), with the days changed.
    again = {"action": "prune_payloads", "_selected_action": [old.pk, recent.pk], "older_than_days": "30"}
    recount = admin.post("/admin/chats/ingestionreceipt/", {**again, "count": "1"})
    assert "1 receipt created before" in recount.content.decode()
    assert not IngestionReceipt.objects.filter(payload__isnull=True).exists()

    applied = admin.post("/admin/chats/ingestionreceipt/", {**again, "apply": "1"})

    assert applied.status_code == 302
    assert list(IngestionReceipt.objects.filter(payload__isnull=True).values_list("pk", flat=True)) == [old.pk]
    assert not ReceiptPayload.objects.filter(pk=old.payload_sha256).exists()
    assert ReceiptPayload.objects.filter(pk__in=[old_unselected.payload_sha256, recent.payload_sha256]).count() == 2
    event = AuditEvent.objects.get(action="receipt.payloads_pruned")
    assert event.actor == admin_user and event.after is not None and event.after["receipts"] == 1
    page = admin.get(f"/admin/chats/ingestionreceipt/{old.pk}/change/").content.decode()
    assert "Removed by retention" in page and old.payload_sha256 in page
    assert admin.get(f"/admin/chats/ingestionreceipt/{old.pk}/payload/").status_code == 410


def test_auditors_read_receipts_and_payloads_but_cannot_remove_payloads(
    ingest_client: APIClient, ingest_key: str
) -> None:
    (receipt,) = _ingest_and_age(ingest_client, "audited", days=40)
    auditor = User.objects.create_user(username="aude", password="x", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    client = signed_in(auditor)

    page = client.get("/admin/chats/ingestionreceipt/")
    tried = client.post(
        "/admin/chats/ingestionreceipt/",
        {"action": "prune_payloads", "_selected_action": [receipt.pk], "older_than_days": "0", "apply": "1"},
    )

    assert page.status_code == 200 and "prune_payloads" not in page.content.decode()
    assert client.get(f"/admin/chats/receiptpayload/{receipt.payload_sha256}/change/").status_code == 200
    assert tried.status_code in (200, 302)
    assert IngestionReceipt.objects.get(pk=receipt.pk).payload_id is not None
    assert not AuditEvent.objects.filter(action="receipt.payloads_pruned").exists()
