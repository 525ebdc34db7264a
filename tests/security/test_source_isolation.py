"""What the permission matrix cannot see in a status code: that a source's key lists and exports only its own
source's conversations, feedback and artifacts, reads only its own receipts, and writes only into its own source;
that ingestion refuses people; and that a session's write without a CSRF token is refused (the matrix sends every
write with a valid token, so that its refusals are permissions').

The world is the matrix's (tests/security/permission_matrix.py): source A owns the conversation, its receipt and the
first reviewer's feedback on it; source B has a conversation of its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, IngestionReceipt, InjectedArtifact, Message
from chats.services.sources import api_key_create
from tests.security.permission_matrix import (
    EXPORT_FORMATS,
    TINY_DOCUMENT,
    World,
    state,
    world,  # noqa: F401  (the fixture)
)


def key_client(raw_key: str) -> Client:
    return Client(headers={"Authorization": f"Api-Key {raw_key}"})


def ndjson(client: Client, path: str) -> list[Any]:
    response = client.get(path)
    assert response.status_code == 200, path
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]  # type: ignore[attr-defined]


def test_a_session_write_without_a_csrf_token_is_refused(world: World) -> None:  # noqa: F811
    before = state()
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.reviewer)
    superuser = Client(enforce_csrf_checks=True)
    superuser.force_login(User.objects.get(username="root"))

    page = client.post(f"/conversations/{world.conversation.uuid}/feedback/{world.feedback.uuid}/delete/")
    api = client.patch(
        f"/api/v1/feedback/{world.feedback.uuid}/", data=json.dumps({"comment": "x"}), content_type="application/json"
    )
    in_admin = superuser.post(f"/admin/chats/feedback/{world.feedback.pk}/delete/", {"post": "yes"})

    assert (page.status_code, api.status_code, in_admin.status_code) == (403, 403, 403)
    assert "CSRF" in api.json()["errors"][0]["message"]
    assert state() == before


def test_source_b_lists_and_exports_none_of_source_a(world: World) -> None:  # noqa: F811
    client = key_client(world.raw_key_b)
    mine, theirs = str(world.conversation_b.uuid), str(world.conversation.uuid)

    listed = [row["uuid"] for row in client.get("/api/v1/conversations/").json()["results"]]
    named_a = client.get(f"/api/v1/conversations/?source={world.source_a.name}")
    feedback = client.get("/api/v1/feedback/").json()["results"]
    artifact = world.admin_objects["chats.injectedartifact"]
    assert isinstance(artifact, InjectedArtifact)
    artifact_detail = client.get(f"/api/v1/artifacts/{artifact.artifact_id}/")
    artifacts = client.get("/api/v1/artifacts/").json()["results"]
    artifact_lines = ndjson(client, "/api/v1/export/artifacts/")
    exported = {fmt: ndjson(client, f"/api/v1/export/?format={fmt}&envelope=true") for fmt in EXPORT_FORMATS}
    training = ndjson(client, "/api/v1/export/?format=training")

    assert listed == [mine]
    # Source A's name answers as a name that does not exist would: nothing says that source is there.
    assert named_a.status_code == 400 and "Select a valid choice" in named_a.json()["errors"][0]["message"]
    assert feedback == [] and artifact_detail.status_code == 404
    # B's own conversation injects nothing: B sees no artifact of A's.
    assert artifacts == [] and artifact_lines == []
    assert {fmt: [line["conversation"] for line in lines] for fmt, lines in exported.items()} == {
        fmt: [mine] for fmt in EXPORT_FORMATS
    }
    assert [line["metadata"]["conversation"] for line in training] == [mine]
    assert theirs not in json.dumps(exported)


def test_source_a_lists_its_own_conversation_and_the_feedback_on_it(world: World) -> None:  # noqa: F811
    client = key_client(world.raw_key_a)

    listed = [row["uuid"] for row in client.get("/api/v1/conversations/").json()["results"]]
    feedback = [row["uuid"] for row in client.get("/api/v1/feedback/").json()["results"]]

    assert listed == [str(world.conversation.uuid)]
    assert feedback == [str(world.feedback.uuid)]


def test_a_source_reads_only_its_own_receipts(world: World) -> None:  # noqa: F811
    sent = key_client(world.raw_key_b).post(
        "/api/v1/ingest/", data=json.dumps(TINY_DOCUMENT), content_type="application/json"
    )
    receipt_b = sent.json()["receipt"]
    receipt_a = world.admin_objects["chats.ingestionreceipt"]
    assert isinstance(receipt_a, IngestionReceipt)

    assert sent.status_code == 201
    assert key_client(world.raw_key_b).get(f"/api/v1/receipts/{receipt_b}/").status_code == 200
    assert key_client(world.raw_key_a).get(f"/api/v1/receipts/{receipt_b}/").status_code == 404
    assert key_client(world.raw_key_a).get(f"/api/v1/receipts/{receipt_a.uuid}/").status_code == 200
    assert key_client(world.raw_key_b).get(f"/api/v1/receipts/{receipt_a.uuid}/").status_code == 404


def test_source_b_sending_source_a_s_conversation_makes_its_own(world: World) -> None:  # noqa: F811
    document = {"conversation_id": world.conversation.external_id, "chat_history": TINY_DOCUMENT["chat_history"]}
    before = Message.objects.filter(conversation=world.conversation).count()

    response = key_client(world.raw_key_b).post(
        "/api/v1/ingest/", data=json.dumps(document), content_type="application/json"
    )

    assert response.status_code == 201
    assert Conversation.objects.get(uuid=response.json()["conversation"]).source == world.source_b
    assert Message.objects.filter(conversation=world.conversation).count() == before


@pytest.mark.parametrize("path", ["/api/v1/ingest/", "/api/v1/ingest/bulk/"])
def test_ingest_answers_a_bad_document_with_400_to_a_source_and_403_to_a_person_s_token(
    world: World,  # noqa: F811
    path: str,
) -> None:
    tokens = [
        api_key_create(user=User.objects.get(username=username), name="personal")[1] for username in ("rita", "root")
    ]
    bad = json.dumps({"chat_history": []} if path.endswith("ingest/") else "not an array")

    from_source = key_client(world.raw_key_a).post(path, data=bad, content_type="application/json")
    receipts = IngestionReceipt.objects.count()
    from_people = [
        key_client(token).post(path, data=json.dumps(TINY_DOCUMENT), content_type="application/json").status_code
        for token in tokens
    ]

    assert from_source.status_code == 400
    assert from_people == [403, 403]
    assert IngestionReceipt.objects.count() == receipts
