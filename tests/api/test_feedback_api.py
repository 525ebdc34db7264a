"""/api/v1/feedback/: reviewers give, change and delete their own feedback through the same services (and so the
same validation and audit events) as the review pages; everyone else reads at most."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from chats.models import AuditEvent, Feedback, Label, Message
from chats.services.ingestion import conversation_ingest
from chats.services.sources import api_key_create
from tests.factories import last_assistant, make_conversation, make_labels
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db


def client_for(user: Any) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def post(client: APIClient, body: dict[str, Any]) -> Any:
    return client.post("/api/v1/feedback/", data=json.dumps(body), content_type="application/json")


def patch(client: APIClient, uuid: Any, body: dict[str, Any]) -> Any:
    return client.patch(f"/api/v1/feedback/{uuid}/", data=json.dumps(body), content_type="application/json")


@pytest.fixture
def conversation(source: Any) -> Any:
    make_labels("helpful", "hallucination")
    return make_conversation(source, n_messages=5)


def test_a_reviewer_gives_feedback_on_a_message_and_it_is_audited(conversation: Any, reviewer: Any) -> None:
    answer = last_assistant(conversation)

    response = post(
        client_for(reviewer),
        {
            "conversation": str(conversation.uuid),
            "message": answer.key,
            "score": -1,
            "labels": ["hallucination"],
            "comment": "Invented a primer.",
            "correction": "Use the primers from the protocol.",
        },
    )

    assert response.status_code == 201
    body = response.json()
    assert body["message"] == answer.key and body["author"] == "rita" and body["origin"] == "reviewer"
    assert body["labels"] == ["hallucination"] and body["correction"] == "Use the primers from the protocol."
    event = AuditEvent.objects.get(action="feedback.created")
    assert event.actor == reviewer and event.target_id == body["uuid"]
    conversation.refresh_from_db()
    assert conversation.score_down == 1


def test_posting_again_on_the_same_target_changes_the_reviewers_feedback(conversation: Any, reviewer: Any) -> None:
    client = client_for(reviewer)
    first = post(client, {"conversation": str(conversation.uuid), "score": 1})

    second = post(client, {"conversation": str(conversation.uuid), "score": -1, "comment": "on reflection"})

    assert second.status_code == 200 and second.json()["uuid"] == first.json()["uuid"]
    assert Feedback.objects.get().score == -1
    assert AuditEvent.objects.filter(action="feedback.updated").count() == 1


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, ""),  # nothing given
        ({"score": 3}, "/score"),
        ({"labels": ["nonexistent"]}, "/labels/0"),
        ({"message": "no-such-key", "score": 1}, "/message"),
        ({"score": "high"}, "/score"),
        ({"labels": "helpful"}, "/labels"),
    ],
)
def test_invalid_feedback_is_a_400_with_a_path(conversation: Any, reviewer: Any, body: Any, path: str) -> None:
    response = post(client_for(reviewer), {"conversation": str(conversation.uuid), **body})

    assert response.status_code == 400
    assert path in [error["path"] for error in response.json()["errors"]]
    assert not Feedback.objects.exists()


def test_only_an_assistant_message_can_be_corrected(conversation: Any, reviewer: Any) -> None:
    user_message = Message.objects.filter(conversation=conversation, role="user").first()
    assert user_message is not None

    response = post(
        client_for(reviewer),
        {"conversation": str(conversation.uuid), "message": user_message.key, "correction": "x"},
    )

    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "/correction"


def test_an_unknown_conversation_is_a_400(reviewer: Any) -> None:
    response = post(client_for(reviewer), {"conversation": "0b8f9a57-8f1e-4a44-9d0f-0d1c3b1c2a11", "score": 1})

    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "/conversation"


def test_a_reviewer_changes_only_the_fields_given(conversation: Any, reviewer: Any) -> None:
    client = client_for(reviewer)
    uuid = post(client, {"conversation": str(conversation.uuid), "score": 1, "labels": ["helpful"]}).json()["uuid"]

    response = patch(client, uuid, {"comment": "clear and correct"})

    assert response.status_code == 200
    assert response.json()["score"] == 1 and response.json()["labels"] == ["helpful"]
    assert response.json()["comment"] == "clear and correct"
    event = AuditEvent.objects.get(action="feedback.updated")
    assert event.before is not None and event.after is not None
    assert event.before["comment"] == "" and event.after["comment"] == "clear and correct"


def test_a_reviewer_deletes_their_feedback_and_it_is_audited(conversation: Any, reviewer: Any) -> None:
    client = client_for(reviewer)
    uuid = post(client, {"conversation": str(conversation.uuid), "score": 1}).json()["uuid"]

    response = client.delete(f"/api/v1/feedback/{uuid}/")

    assert response.status_code == 204 and not Feedback.objects.exists()
    assert AuditEvent.objects.filter(action="feedback.deleted", target_id=uuid).exists()


def test_a_reviewer_cannot_change_or_delete_another_reviewers_feedback(
    conversation: Any, reviewer: Any, other_reviewer: Any
) -> None:
    uuid = post(client_for(reviewer), {"conversation": str(conversation.uuid), "score": 1}).json()["uuid"]
    intruder = client_for(other_reviewer)

    assert intruder.get(f"/api/v1/feedback/{uuid}/").status_code == 200  # reading is fine
    assert patch(intruder, uuid, {"score": -1}).status_code == 403
    assert patch(intruder, uuid, {"labels": ["nonexistent"]}).status_code == 403
    assert intruder.delete(f"/api/v1/feedback/{uuid}/").status_code == 403
    assert Feedback.objects.get().score == 1
    assert not AuditEvent.objects.filter(action__in=["feedback.updated", "feedback.deleted"]).exists()


def test_imported_feedback_cannot_be_changed(source: Any, reviewer: Any) -> None:
    result = conversation_ingest(source=source, document=load_fixture("chat_document/masterbrain_chat_document.json"))
    imported = Feedback.objects.filter(conversation=result.conversation).first()
    assert imported is not None and imported.author is None

    client = client_for(reviewer)

    assert patch(client, imported.uuid, {"score": 1}).status_code == 403
    assert client.delete(f"/api/v1/feedback/{imported.uuid}/").status_code == 403


def test_an_auditor_reads_feedback_but_cannot_write(conversation: Any, reviewer: Any, auditor: Any) -> None:
    uuid = post(client_for(reviewer), {"conversation": str(conversation.uuid), "score": 1}).json()["uuid"]
    client = client_for(auditor)

    assert [item["uuid"] for item in client.get("/api/v1/feedback/").json()["results"]] == [uuid]
    assert post(client, {"conversation": str(conversation.uuid), "score": 1}).status_code == 403
    assert patch(client, uuid, {"score": -1}).status_code == 403
    assert client.delete(f"/api/v1/feedback/{uuid}/").status_code == 403


def test_anonymous_and_source_keys_cannot_write_feedback(
    conversation: Any, api_client: APIClient, ingest_client: APIClient
) -> None:
    body = {"conversation": str(conversation.uuid), "score": 1}

    assert post(api_client, body).status_code == 401
    assert post(ingest_client, body).status_code == 403


def test_a_reviewer_writes_with_a_personal_token(conversation: Any, reviewer: Any) -> None:
    _, raw = api_key_create(user=reviewer)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")

    response = post(client, {"conversation": str(conversation.uuid), "score": 1})

    assert response.status_code == 201 and response.json()["author"] == "rita"


def test_a_source_key_reads_only_the_feedback_of_its_own_source(
    conversation: Any, other_source: Any, reviewer: Any, other_ingest_key: str
) -> None:
    post(client_for(reviewer), {"conversation": str(conversation.uuid), "score": 1})
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    assert client.get("/api/v1/feedback/").json()["results"] == []
    assert client.get(f"/api/v1/feedback/{Feedback.objects.get().uuid}/").status_code == 404


def test_the_feedback_list_filters(conversation: Any, source: Any, reviewer: Any, other_reviewer: Any) -> None:
    other = make_conversation(source, n_messages=3)
    mine = post(client_for(reviewer), {"conversation": str(conversation.uuid), "score": 1}).json()["uuid"]
    theirs = post(client_for(other_reviewer), {"conversation": str(other.uuid), "score": -1}).json()["uuid"]
    client = client_for(reviewer)

    def listed(query: str) -> list[str]:
        return [item["uuid"] for item in client.get(f"/api/v1/feedback/?{query}").json()["results"]]

    assert listed("mine=true") == [mine]
    assert listed(f"conversation={other.uuid}") == [theirs]
    assert listed("author=oscar") == [theirs]
    assert listed("origin=masterbrain") == []
    assert set(listed("")) == {mine, theirs}


def test_labels_are_given_by_name(conversation: Any, reviewer: Any) -> None:
    response = post(
        client_for(reviewer),
        {"conversation": str(conversation.uuid), "labels": ["helpful", "hallucination", "helpful"]},
    )

    assert response.status_code == 201
    assert sorted(response.json()["labels"]) == ["hallucination", "helpful"]
    assert Label.objects.count() == 2
