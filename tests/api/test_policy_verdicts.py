"""What the model was given, and was it allowed: a Record QA document's injections judged against its context,
through the real stack (ingestion, single and bulk; the conversation list and detail; the export).

The document is seed 001's, grown by one more turn: the protocol it injects is permitted (its kind is enabled and
the context lists it), a record is injected although records are not enabled, a discussion the context does not
list is injected, and the context lists a protocol that is never used.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from chats.models import ContextArtifactId, Conversation, InjectedArtifact
from tests.factories import make_conversation
from tests.factories.documents import load_fixture
from tests.factories.policy import (
    DISABLED_RECORD,
    LISTED_DISCUSSION,
    NEVER_USED,
    PERMITTED,
    UNLISTED_DISCUSSION,
    document,
    injection,
    post,
)

pytestmark = pytest.mark.django_db

VERDICTS = {PERMITTED: "permitted", DISABLED_RECORD: "kind_not_enabled", UNLISTED_DISCUSSION: "not_listed"}
LISTED = [
    {"kind": "protocol", "artifact_id": PERMITTED, "id_well_formed": False, "state": "used"},
    {"kind": "protocol", "artifact_id": NEVER_USED, "id_well_formed": True, "state": "unused"},
    {"kind": "record", "artifact_id": DISABLED_RECORD, "id_well_formed": True, "state": "used"},
    {"kind": "discussion", "artifact_id": LISTED_DISCUSSION, "id_well_formed": True, "state": "unused"},
]


@pytest.fixture
def reader(api_client: APIClient, reviewer: Any) -> APIClient:
    api_client.force_login(reviewer)
    return api_client


def detail(reader: APIClient, uuid: str) -> dict[str, Any]:
    response = reader.get(f"/api/v1/conversations/{uuid}/?branch=all")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def verdicts(body: dict[str, Any]) -> dict[str, str | None]:
    return {artifact["artifact_id"]: artifact["verdict"] for artifact in body["artifacts"]}


def listed(query: str, reader: APIClient) -> set[str]:
    response = reader.get(f"/api/v1/conversations/?{query}")
    assert response.status_code == 200, response.json()
    return {item["uuid"] for item in response.json()["results"]}


# --- one document, its verdicts everywhere ---------------------------------------------------------------------


def test_each_injection_has_its_verdict_and_each_listed_id_its_state_in_the_detail(
    ingest_client: APIClient, reader: APIClient
) -> None:
    uuid = post(ingest_client, "/api/v1/ingest/", document())["conversation"]

    body = detail(reader, uuid)

    assert verdicts(body) == VERDICTS
    assert body["context_ids"] == LISTED
    assert body["policy_violation"] is True
    [item] = reader.get("/api/v1/conversations/").json()["results"]
    assert item["uuid"] == uuid and item["policy_violation"] is True


def test_a_conversation_without_a_context_has_no_verdicts(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source)

    body = detail(reader, str(conversation.uuid))

    assert body["policy_violation"] is None and body["context_ids"] == []
    assert {artifact["verdict"] for artifact in body["artifacts"]} <= {None}


def test_the_export_envelope_carries_the_verdicts_and_its_document_goes_back_in_unchanged(
    ingest_client: APIClient, reader: APIClient
) -> None:
    uuid = post(ingest_client, "/api/v1/ingest/", document())["conversation"]

    response = reader.get("/api/v1/export/?format=record_qa&envelope=true")
    [line] = [json.loads(text) for text in response.getvalue().decode().splitlines()]
    training = reader.get("/api/v1/export/?format=training").getvalue().decode().splitlines()

    assert line["conversation"] == uuid
    policy = line["policy"]
    assert policy["violation"] is True
    assert {a["artifact_id"]: a["verdict"] for a in policy["artifacts"]} == VERDICTS
    assert {a["artifact_id"]: a["tool_call_id"] for a in policy["artifacts"]} == {
        PERMITTED: "call_abc123",
        DISABLED_RECORD: "call_r",
        UNLISTED_DISCUSSION: "call_d",
    }
    assert policy["context_ids"] == LISTED
    # The verdicts stay beside the document: it is the document as it came, and it goes back in as it came.
    assert "policy" not in line["document"] and line["document"]["context"] == document()["context"]
    assert post(ingest_client, "/api/v1/ingest/", line["document"])["outcome"] == "unchanged"
    assert json.loads(training[0])["metadata"]["policy_violation"] is True


def test_the_policy_filter_tells_violations_permitted_conversations_and_those_without_a_context_apart(
    source: Any, ingest_client: APIClient, reader: APIClient
) -> None:
    violation = post(ingest_client, "/api/v1/ingest/", document())["conversation"]
    seed = load_fixture("record_qa/seed_protocol_injection.json") | {"chat_id": "seed"}  # its own conversation
    clean = post(ingest_client, "/api/v1/ingest/", seed)
    without = str(make_conversation(source).uuid)

    assert listed("policy=violation", reader) == {violation}
    assert listed("policy=permitted", reader) == {clean["conversation"]}
    assert listed("policy=no_context", reader) == {without}
    assert reader.get("/api/v1/conversations/?policy=maybe").status_code == 400


@pytest.mark.parametrize(
    "artifact_id",
    [PERMITTED, NEVER_USED, DISABLED_RECORD, LISTED_DISCUSSION, UNLISTED_DISCUSSION],
    ids=["permitted", "listed, never used", "kind not enabled", "listed, kind enabled, unused", "not listed"],
)
def test_every_id_injected_or_only_listed_finds_the_conversation(
    source: Any, ingest_client: APIClient, reader: APIClient, artifact_id: str
) -> None:
    uuid = post(ingest_client, "/api/v1/ingest/", document())["conversation"]
    make_conversation(source)

    assert listed(f"artifact_id={artifact_id}", reader) == {uuid}
    assert listed(f"artifact_id={artifact_id}&policy=violation", reader) == {uuid}
    assert listed(f"artifact_id={artifact_id}&policy=permitted", reader) == set()


def test_an_id_neither_injected_nor_listed_finds_nothing(ingest_client: APIClient, reader: APIClient) -> None:
    post(ingest_client, "/api/v1/ingest/", document())

    assert listed("artifact_id=airalogy.id.protocol.nobody", reader) == set()


def test_the_filtered_list_takes_the_same_queries_for_one_conversation_and_many(
    ingest_client: APIClient, reader: APIClient, django_assert_num_queries: Any
) -> None:
    post(ingest_client, "/api/v1/ingest/", document())
    query = f"/api/v1/conversations/?policy=violation&artifact_id={NEVER_USED}"
    with django_assert_num_queries(4):  # session, user, groups, conversations
        assert len(reader.get(query).json()["results"]) == 1

    for number in range(20):
        post(ingest_client, "/api/v1/ingest/", document() | {"chat_id": f"chat-{number}"})
    with django_assert_num_queries(4):
        assert len(reader.get(query).json()["results"]) == 21


def test_the_detail_of_a_conversation_with_a_context_takes_the_same_queries_whatever_its_size(
    ingest_client: APIClient, reader: APIClient, django_assert_num_queries: Any
) -> None:
    small = post(ingest_client, "/api/v1/ingest/", document())["conversation"]
    long_document = document() | {"chat_id": "long"}
    for turn in range(30):
        long_document["main_messages"] += injection(
            f"call_{turn}", "inject_airalogy_protocols", "airalogy_protocol_ids", NEVER_USED, "airalogy_protocols"
        )
    large = post(ingest_client, "/api/v1/ingest/", long_document)["conversation"]

    for uuid in (small, large):
        # session, user, groups, conversation, the view recorded (read audit), messages, tool calls, artifacts,
        # listed ids, feedback
        with django_assert_num_queries(10):
            assert reader.get(f"/api/v1/conversations/{uuid}/?branch=all").status_code == 200


# --- a resend that changes the context -------------------------------------------------------------------------


def test_a_resend_that_enables_the_kind_and_lists_the_id_judges_every_injection_again(
    ingest_client: APIClient, reader: APIClient
) -> None:
    first = post(ingest_client, "/api/v1/ingest/", document())
    resent = document(records_enabled=True, discussions=[LISTED_DISCUSSION, UNLISTED_DISCUSSION])

    second = post(ingest_client, "/api/v1/ingest/", resent)
    body = detail(reader, first["conversation"])

    assert (second["conversation"], second["outcome"]) == (first["conversation"], "updated")
    assert verdicts(body) == dict.fromkeys(VERDICTS, "permitted")
    assert body["policy_violation"] is False
    assert body["context_ids"] == [
        *LISTED,
        {"kind": "discussion", "artifact_id": UNLISTED_DISCUSSION, "id_well_formed": True, "state": "used"},
    ]
    assert listed("policy=permitted", reader) == {first["conversation"]}
    assert listed("policy=violation", reader) == set()
    assert post(ingest_client, "/api/v1/ingest/", resent)["outcome"] == "unchanged"


def test_a_resend_that_adds_an_injection_of_a_listed_id_marks_it_used(
    ingest_client: APIClient, reader: APIClient
) -> None:
    first = post(ingest_client, "/api/v1/ingest/", document())
    longer = document()
    longer["main_messages"] += injection(
        "call_late", "inject_airalogy_protocols", "airalogy_protocol_ids", NEVER_USED, "airalogy_protocols"
    )

    post(ingest_client, "/api/v1/ingest/", longer)
    body = detail(reader, first["conversation"])

    assert verdicts(body) == VERDICTS | {NEVER_USED: "permitted"}
    assert {item["artifact_id"]: item["state"] for item in body["context_ids"]}[NEVER_USED] == "used"


# --- the bulk endpoint reaches the same verdicts ----------------------------------------------------------------


def _policy_rows(conversation_uuid: str) -> dict[str, Any]:
    conversation = Conversation.objects.get(uuid=conversation_uuid)
    return {
        "violation": conversation.policy_violation,
        "artifacts": sorted(
            InjectedArtifact.objects.filter(conversation=conversation).values_list("artifact_id", "verdict")
        ),
        "listed": sorted(
            ContextArtifactId.objects.filter(conversation=conversation).values_list(
                "kind", "artifact_id", "id_well_formed", "state"
            )
        ),
    }


def test_the_bulk_endpoint_stores_the_same_verdicts_and_recomputes_them_on_a_resend(
    ingest_client: APIClient, other_ingest_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    bulk_client = APIClient()
    bulk_client.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    original = document() | {"chat_id": "record-qa"}
    resent = document(records_enabled=True, discussions=[UNLISTED_DISCUSSION]) | {"chat_id": "record-qa"}
    seed = load_fixture("record_qa/seed_protocol_injection.json") | {"chat_id": "seed"}

    single = [post(ingest_client, "/api/v1/ingest/", body)["conversation"] for body in (original, seed)]
    bulk = [item["conversation"] for item in post(bulk_client, "/api/v1/ingest/bulk/", [original, seed])["results"]]

    assert [_policy_rows(uuid) for uuid in bulk] == [_policy_rows(uuid) for uuid in single]
    assert _policy_rows(bulk[0])["violation"] is True

    post(ingest_client, "/api/v1/ingest/", resent)
    [result] = post(bulk_client, "/api/v1/ingest/bulk/", [resent])["results"]

    assert result["outcome"] == "updated"
    assert _policy_rows(bulk[0]) == _policy_rows(single[0])
    assert _policy_rows(bulk[0])["violation"] is False
    assert ("discussion", LISTED_DISCUSSION, True, "unused") not in _policy_rows(bulk[0])["listed"]
    # On PostgreSQL by the batch writer itself, not by its fallback to storing documents one by one.
    assert "storing them one by one" not in caplog.text


# --- conversations stored before the verdicts existed ----------------------------------------------------------


def test_the_migration_judges_conversations_stored_before_it_as_ingestion_does(
    ingest_client: APIClient, source: Any
) -> None:
    judged = post(ingest_client, "/api/v1/ingest/", document())["conversation"]
    expected = _policy_rows(judged)
    InjectedArtifact.objects.update(verdict=None)
    ContextArtifactId.objects.all().delete()
    Conversation.objects.update(policy_violation=None)
    without = make_conversation(source)
    migration = importlib.import_module("chats.migrations.0009_injection_policy_verdicts")

    migration.fill_verdicts(apps, None)

    assert _policy_rows(judged) == expected
    assert _policy_rows(str(without.uuid)) == {"violation": None, "artifacts": [], "listed": []}
