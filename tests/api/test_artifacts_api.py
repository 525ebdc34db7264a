"""The artifact API: every artifact id seen with its figures (/api/v1/artifacts/), one artifact with its payload
versions and conversations (/api/v1/artifacts/<id>/), and the NDJSON export of the list
(/api/v1/export/artifacts/). Documents go in through the ingest API, as in production."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from chats.models import AuditEvent, Conversation, Source
from chats.services.feedback import feedback_submit
from tests.factories import make_conversation, make_labels
from tests.factories.artifacts import (
    FIRST_MARKDOWN,
    PROTOCOL,
    SECOND_MARKDOWN,
    protocol_document,
    two_versions_in_three_conversations,
)
from tests.factories.artifacts import ingested as post
from tests.factories.policy import (
    DISABLED_RECORD,
    LISTED_DISCUSSION,
    NEVER_USED,
    PERMITTED,
    UNLISTED_DISCUSSION,
    document,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(api_client: APIClient, reviewer: Any) -> APIClient:
    api_client.force_login(reviewer)
    return api_client


def detail_url(artifact_id: str) -> str:
    return f"/api/v1/artifacts/{quote(artifact_id, safe='')}/"


def items(client: APIClient, query: str = "") -> dict[tuple[str, str], dict[str, Any]]:
    response = client.get(f"/api/v1/artifacts/{query}")
    assert response.status_code == 200, response.json()
    return {(item["kind"], item["artifact_id"]): item for item in response.json()["results"]}


# --- the case ----------------------------------------------------------------------------------------


def test_a_protocol_injected_with_two_payloads_into_three_conversations_has_two_versions(
    ingest_client: APIClient, reader: APIClient
) -> None:
    one, two, three = [post(ingest_client, body) for body in two_versions_in_three_conversations()]

    body = reader.get(detail_url(PROTOCOL)).json()

    first, second = body["versions"]
    assert {c["uuid"] for c in first["conversations"]} == {one, two}
    assert {c["uuid"] for c in second["conversations"]} == {three}
    assert (first["conversation_count"], second["conversation_count"]) == (2, 1)
    assert first["payload"]["markdown"] == FIRST_MARKDOWN and second["payload"]["markdown"] == SECOND_MARKDOWN
    assert first["digest"] != second["digest"] and len(first["digest"]) == 64
    assert {c["verdict"] for c in first["conversations"] + second["conversations"]} == {"permitted"}
    [kind] = body["kinds"]
    assert (kind["kind"], kind["injected_conversations"], kind["violations"]) == ("protocol", 3, 0)
    assert {use["uuid"] for use in body["results"]} == {one, two, three}


def test_the_same_payload_sent_again_with_its_keys_in_another_order_is_the_same_version(
    ingest_client: APIClient, reader: APIClient
) -> None:
    post(ingest_client, protocol_document("chat-one", FIRST_MARKDOWN))
    reordered = protocol_document("chat-two", FIRST_MARKDOWN)
    tool = reordered["main_messages"][2]
    item = json.loads(tool["content"])["airalogy_protocols"][0]
    tool["content"] = json.dumps({"airalogy_protocols": [dict(reversed(list(item.items())))]})
    post(ingest_client, reordered)

    [version] = reader.get(detail_url(PROTOCOL)).json()["versions"]

    assert version["conversation_count"] == 2 and len(version["conversations"]) == 2


# --- the list's figures, filters and scope -------------------------------------------------------------------


def test_the_list_counts_injections_permissions_violations_and_feedback_per_artifact(
    source: Source, ingest_client: APIClient, reader: APIClient, reviewer: Any
) -> None:
    violating = post(ingest_client, document())
    post(ingest_client, document() | {"chat_id": "again"})
    [helpful] = make_labels("helpful")
    conversation = Conversation.objects.get(uuid=violating)
    feedback_submit(author=reviewer, conversation=conversation, score=-1, labels=[helpful])

    found = items(reader)

    assert set(found) == {
        ("protocol", PERMITTED),
        ("protocol", NEVER_USED),
        ("record", DISABLED_RECORD),
        ("discussion", LISTED_DISCUSSION),
        ("discussion", UNLISTED_DISCUSSION),
    }
    figures = {key: (i["injected_conversations"], i["permitted_only"], i["violations"]) for key, i in found.items()}
    assert figures == {
        ("protocol", PERMITTED): (2, 0, 0),
        ("protocol", NEVER_USED): (0, 2, 0),
        ("record", DISABLED_RECORD): (2, 0, 2),
        ("discussion", LISTED_DISCUSSION): (0, 2, 0),
        ("discussion", UNLISTED_DISCUSSION): (2, 0, 2),
    }
    assert found["record", DISABLED_RECORD]["scores"] == {"up": 0, "neutral": 0, "down": 1}
    assert found["record", DISABLED_RECORD]["labels"] == {"helpful": 1}
    assert found["protocol", NEVER_USED]["scores"] == {"up": 0, "neutral": 0, "down": 0}
    assert found["protocol", NEVER_USED]["first_injected_at"] is None
    assert found["protocol", NEVER_USED]["last_received_at"] is None
    # These Record QA documents give no time of their own: the model's time is unknown, not the received time.
    assert found["protocol", PERMITTED]["first_injected_at"] is None
    assert found["protocol", PERMITTED]["last_received_at"] is not None


def test_the_list_filters_by_kind_and_source_and_sorts(
    source: Source, other_source: Source, ingest_client: APIClient, other_ingest_key: str, reader: APIClient
) -> None:
    post(ingest_client, document())
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    post(other, protocol_document("elsewhere", FIRST_MARKDOWN, artifact_id="airalogy.id.protocol.elsewhere.v.1"))

    assert set(items(reader, "?kind=record")) == {("record", DISABLED_RECORD)}
    assert ("protocol", "airalogy.id.protocol.elsewhere.v.1") not in items(reader, f"?source={source.name}")
    assert set(items(reader, f"?source={other_source.name}")) == {("protocol", "airalogy.id.protocol.elsewhere.v.1")}
    by_violations = list(items(reader, "?sort=violations"))
    assert set(by_violations[:2]) == {("record", DISABLED_RECORD), ("discussion", UNLISTED_DISCUSSION)}
    by_id = [artifact_id for _, artifact_id in items(reader, "?sort=artifact_id")]
    assert by_id == sorted(by_id)
    assert reader.get("/api/v1/artifacts/?kind=spell").status_code == 400
    assert reader.get("/api/v1/artifacts/?source=nowhere").json()["errors"][0]["path"] == "/source"


def test_a_source_key_sees_only_its_own_source_s_artifacts(
    source: Source, other_source: Source, ingest_client: APIClient, other_ingest_key: str
) -> None:
    post(ingest_client, document())
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    elsewhere = "airalogy.id.protocol.elsewhere.v.1"
    post(other, protocol_document("elsewhere", FIRST_MARKDOWN, artifact_id=elsewhere))
    post(other, protocol_document("shared", SECOND_MARKDOWN))  # the same protocol id as source A's

    assert set(items(other)) == {("protocol", elsewhere), ("protocol", PROTOCOL)}
    assert items(other)["protocol", PROTOCOL]["injected_conversations"] == 1
    # Source A's name answers as a name that does not exist would.
    assert other.get(f"/api/v1/artifacts/?source={source.name}").status_code == 400
    assert other.get(detail_url(DISABLED_RECORD)).status_code == 404
    [version] = other.get(detail_url(PROTOCOL)).json()["versions"]
    assert version["payload"]["markdown"] == SECOND_MARKDOWN
    lines = other.get("/api/v1/export/artifacts/").getvalue().decode().splitlines()
    assert {json.loads(line)["artifact_id"] for line in lines} == {elsewhere, PROTOCOL}


def test_the_list_pages_are_bounded_and_linked(ingest_client: APIClient, reader: APIClient) -> None:
    for number in range(3):
        post(ingest_client, protocol_document(f"chat-{number}", FIRST_MARKDOWN, artifact_id=f"airalogy.id.p.{number}"))

    body = reader.get("/api/v1/artifacts/?sort=artifact_id").json()

    assert body["previous"] is None and body["next"] is None and len(body["results"]) == 3
    assert reader.get("/api/v1/artifacts/?page=2").json()["results"] == []
    assert reader.get("/api/v1/artifacts/?page=100000").status_code == 400


# --- ids as given ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "artifact_id",
    ["files/2024/run 7/protocol.md?v=2#top", "a" * 3000, "100%/ü", "ends-with-a-slash/", "É\n\x8d\x08 line break"],
    ids=["slashes and url characters", "very long", "percent and unicode", "trailing slash", "line break"],
)
def test_an_id_of_any_shape_and_length_has_its_detail(
    ingest_client: APIClient, reader: APIClient, artifact_id: str
) -> None:
    uuid = post(ingest_client, protocol_document("odd", FIRST_MARKDOWN, artifact_id=artifact_id))

    body = reader.get(detail_url(artifact_id)).json()

    assert body["artifact_id"] == artifact_id
    assert [use["uuid"] for use in body["results"]] == [uuid]


def test_an_unknown_id_or_one_with_a_nul_is_not_found(reader: APIClient) -> None:
    assert reader.get(detail_url("airalogy.id.protocol.nobody")).status_code == 404
    assert reader.get("/api/v1/artifacts/abc%00def/").status_code == 404


# --- the former ?artifact_id= list -----------------------------------------------------------------------


def test_the_former_artifact_id_query_redirects_to_the_detail_with_the_same_conversations(
    ingest_client: APIClient, reader: APIClient
) -> None:
    uuids = {post(ingest_client, body) for body in two_versions_in_three_conversations()}

    response = reader.get(f"/api/v1/artifacts/?artifact_id={PROTOCOL}&page_size=2")
    first = reader.get(response["Location"]).json()
    second = reader.get(first["next"]).json()

    assert response.status_code == 308
    assert response["Location"] == f"/api/v1/artifacts/{PROTOCOL}/?page_size=2"
    assert {use["uuid"] for use in first["results"] + second["results"]} == uuids
    assert all(use["injections"][0]["tool_name"] == "inject_airalogy_protocols" for use in first["results"])


# --- the export ----------------------------------------------------------------------------------------------


def test_the_export_streams_one_line_per_artifact_with_the_filters_and_is_audited(
    ingest_client: APIClient, reader: APIClient, reviewer: Any
) -> None:
    post(ingest_client, document())

    response = reader.get("/api/v1/export/artifacts/?kind=discussion")
    lines = [json.loads(line) for line in response.getvalue().decode().splitlines()]

    assert response["Content-Type"] == "application/x-ndjson"
    assert [(line["kind"], line["artifact_id"]) for line in lines] == sorted(
        [("discussion", LISTED_DISCUSSION), ("discussion", UNLISTED_DISCUSSION)]
    )
    assert lines == [item for key, item in sorted(items(reader, "?kind=discussion").items())]
    event = AuditEvent.objects.get(action="conversation.exported")
    assert (event.actor_id, event.target_type) == (reviewer.pk, "artifacts")
    assert event.after == {"format": "ndjson", "filters": {"kind": "discussion"}, "count": 2}


def test_the_export_streams_past_one_batch(ingest_client: APIClient, reader: APIClient) -> None:
    from chats.selectors.artifacts import ArtifactFilters, iter_artifacts

    for number in range(5):
        post(ingest_client, protocol_document(f"chat-{number}", FIRST_MARKDOWN, artifact_id=f"airalogy.id.p.{number}"))

    streamed = [summary.artifact_id for summary in iter_artifacts(ArtifactFilters(), batch=2)]

    assert streamed == [f"airalogy.id.p.{number}" for number in range(5)]


# --- query counts --------------------------------------------------------------------------------------------


def test_the_list_and_the_detail_take_the_same_queries_for_few_and_many(
    source: Source, ingest_client: APIClient, reader: APIClient, reviewer: Any, django_assert_num_queries: Any
) -> None:
    [label] = make_labels("helpful")

    def grow(first: int, last: int) -> None:
        for number in range(first, last):
            uuid = post(ingest_client, protocol_document(f"chat-{number}", f"# Version {number % 3}"))
            post(ingest_client, document() | {"chat_id": f"policy-{number}"})
            conversation = Conversation.objects.get(uuid=uuid)
            feedback_submit(author=reviewer, conversation=conversation, score=number % 2 or -1, labels=[label])
        make_conversation(source)

    for first, last in ((0, 1), (1, 12)):
        grow(first, last)
        with django_assert_num_queries(6):  # session, user, groups, grouped figures, scores, labels
            assert reader.get("/api/v1/artifacts/?kind=protocol&sort=conversations").status_code == 200
        # session, user, groups, figures, scores, labels, versions, their payloads, their conversations,
        # the page of conversations, their injections, their labels
        with django_assert_num_queries(12):
            assert reader.get(detail_url(PROTOCOL)).status_code == 200
    # Three markdowns of ours, and the seed's own in the policy documents (its protocol is the same id).
    assert len(reader.get(detail_url(PROTOCOL)).json()["versions"]) == 4


def test_the_former_query_redirects_an_id_with_a_line_break_too(reader: APIClient) -> None:
    response = reader.get("/api/v1/artifacts/?artifact_id=%C3%89%0A%C2%8D%08")

    assert response.status_code == 308
    assert response["Location"] == "/api/v1/artifacts/%C3%89%0A%C2%8D%08/"
