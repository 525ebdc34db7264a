"""Exports over HTTP: one conversation in every format, round trips through ingest and export, the streamed NDJSON
and training JSONL, the command, and the audit of every export."""

from __future__ import annotations

import copy
import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from chats.export import CAPABILITIES, FORMATS
from chats.models import AuditEvent, Conversation, Label, Message
from chats.selectors import exports
from chats.services.feedback import feedback_submit
from chats.services.review import conversation_set_review_status
from tests.export.cases import artifacts_view, comparable, input_cases, messages_view
from tests.factories import ingest, last_assistant, make_conversation, make_labels
from tests.factories.export_documents import CHAT_DOCUMENT, CHAT_GRAPH

pytestmark = pytest.mark.django_db

CASES = input_cases()
PAIRS = [
    pytest.param(case.values[0], target, case.values[1], id=f"{case.id}->{target}")
    for case in CASES
    for target in FORMATS
    if target != case.values[0]
]


@pytest.fixture
def reader(api_client: APIClient, auditor: Any) -> APIClient:
    api_client.force_login(auditor)
    return api_client


def post_json(client: APIClient, url: str, body: object) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def export(client: APIClient, conversation_uuid: str, format: str) -> Any:
    return client.get(f"/api/v1/conversations/{conversation_uuid}/export/?format={format}")


def ndjson(response: Any) -> list[Any]:
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines() if line]


def ingest_over_http(client: APIClient, document: Any, format: str | None = None, external_id: str = "") -> str:
    query = "&".join(f"{key}={value}" for key, value in (("format", format), ("external_id", external_id)) if value)
    response = post_json(client, f"/api/v1/ingest/?{query}", document)
    assert response.status_code == 201, response.json()
    conversation_uuid: str = response.json()["conversation"]
    return conversation_uuid


def stored(uuid: str, branch: exports.Branch = "all") -> Any:
    return exports.conversation_to_canonical(Conversation.objects.get(uuid=uuid), branch=branch)


# --- one conversation ---


@pytest.mark.parametrize(("format", "document"), CASES)
def test_exporting_in_the_format_it_came_in_gives_an_equivalent_document(
    ingest_client: APIClient, reader: APIClient, format: str, document: Any
) -> None:
    uuid = ingest_over_http(ingest_client, document, format)

    response = export(reader, uuid, format)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert comparable(format, response.json()) == comparable(format, document)
    assert json.loads(response["X-Export-Omitted"]) == []


@pytest.mark.parametrize(("origin", "target", "document"), PAIRS)
def test_ingest_in_one_format_export_in_another_and_ingest_again_keeps_what_the_target_holds(
    ingest_client: APIClient, other_ingest_key: str, reader: APIClient, origin: str, target: str, document: Any
) -> None:
    first = ingest_over_http(ingest_client, document, origin, external_id="first")
    exported = export(reader, first, target)
    assert exported.status_code == 200
    # Sent again by another source, so that it is a new conversation (its id may be the same).
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    second = ingest_over_http(other, exported.json(), target, external_id="second")

    original, again = stored(first), stored(second)
    assert again.format == target
    assert messages_view(again, target) == messages_view(original, target)
    if CAPABILITIES[target]["artifacts"]:
        assert artifacts_view(again, target) == artifacts_view(original, target)


def test_a_linear_format_exports_the_active_path_and_says_it_left_branches_out(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=6, branches=1)

    response = export(reader, str(conversation.uuid), "openai")

    assert response.status_code == 200
    active = list(
        Message.objects.filter(conversation=conversation, on_active_path=True)
        .order_by("depth")
        .values_list("text", flat=True)
    )
    assert [message.get("content") or "" for message in response.json()] == active
    omitted = json.loads(response["X-Export-Omitted"])
    assert "1 branch (1 message) not on the active path" in omitted
    assert any(note.startswith("conversation id") or "top-level" in note or note == "title" for note in omitted)


def test_a_tree_format_keeps_every_branch(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=6, branches=2)

    response = export(reader, str(conversation.uuid), "chat_graph")

    assert len(response.json()["nodes"]) == Message.objects.filter(conversation=conversation).count()
    assert not any("active path" in note for note in json.loads(response["X-Export-Omitted"]))


def test_the_omitted_header_names_the_author_metadata_and_node_ids_a_linear_format_drops(
    ingest_client: APIClient, reader: APIClient
) -> None:
    graph = copy.deepcopy(CHAT_GRAPH)  # active path: node-1, node-3
    graph["nodes"][2]["message"]["author"]["metadata"] = {"client": "web"}
    uuid = ingest_over_http(ingest_client, graph)

    for format in ("openai", "chat_document", "record_qa", "chat_history"):
        omitted = json.loads(export(reader, uuid, format)["X-Export-Omitted"])
        assert "author metadata of 1 message" in omitted, format
        assert "message ids of 2 messages (node ids)" in omitted, format
    kept = json.loads(export(reader, uuid, "chatgpt_export")["X-Export-Omitted"])
    assert not any(note.startswith(("author metadata", "message ids")) for note in kept)


def test_times_are_exported_as_they_were_written(source: Any, reader: APIClient) -> None:
    document = copy.deepcopy(CHAT_DOCUMENT)
    document["start_time"], document["end_time"] = "2025-03-01T16:00:00+08:00", "2025-03-01T08:05:30"
    conversation = ingest(source, document)
    assert stored(str(conversation.uuid)).original_times == {
        "start_time": "2025-03-01T16:00:00+08:00",
        "end_time": "2025-03-01T08:05:30",
    }

    exported = export(reader, str(conversation.uuid), "chat_document").json()

    assert (exported["start_time"], exported["end_time"]) == ("2025-03-01T16:00:00+08:00", "2025-03-01T08:05:30")


def test_an_unknown_format_is_a_400_that_names_the_parameter(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source)

    response = export(reader, str(conversation.uuid), "yaml")

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/format"


def test_an_export_is_audited(source: Any, reader: APIClient, auditor: Any) -> None:
    conversation = make_conversation(source)

    export(reader, str(conversation.uuid), "record_qa")

    event = AuditEvent.objects.get(action="conversation.exported")
    assert event.actor == auditor and event.conversation_uuid == conversation.uuid
    assert event.after is not None
    assert event.after["format"] == "record_qa" and event.after["count"] == 1


def test_a_source_key_exports_only_its_own_conversations(
    source: Any, other_source: Any, ingest_client: APIClient
) -> None:
    mine, theirs = make_conversation(source), make_conversation(other_source)

    assert export(ingest_client, str(mine.uuid), "openai").status_code == 200
    assert export(ingest_client, str(theirs.uuid), "openai").status_code == 404


def test_export_needs_a_reading_role(source: Any, api_client: APIClient, no_role_user: Any) -> None:
    conversation = make_conversation(source)
    assert export(api_client, str(conversation.uuid), "openai").status_code in (401, 403)

    api_client.force_login(no_role_user)

    assert export(api_client, str(conversation.uuid), "openai").status_code == 403


# --- bulk NDJSON ---


def test_bulk_export_streams_one_document_per_line_with_the_filters(source: Any, reader: APIClient) -> None:
    pcr = make_conversation(source, topic="PCR", model="qwen3.5-flash")
    make_conversation(source, topic="gel", model="other-model")

    response = reader.get("/api/v1/export/?format=chat_document&model=qwen3.5-flash")

    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    [line] = ndjson(response)
    assert line["chat_id"] == pcr.external_id and line["model"] == "qwen3.5-flash"


def test_bulk_export_lines_can_be_sent_back_to_bulk_ingest(
    source: Any, reader: APIClient, other_ingest_key: str
) -> None:
    for number in range(3):
        make_conversation(source, chat_id=f"chat-{number}")
    body = reader.get("/api/v1/export/?format=chat_history").getvalue()
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    response = other.post("/api/v1/ingest/bulk/", data=body, content_type="application/x-ndjson")

    assert response.json()["summary"]["created"] == 3


def test_bulk_export_envelope_says_what_each_line_left_out(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, branches=1)

    [line] = ndjson(reader.get("/api/v1/export/?format=openai&envelope=true"))

    assert line["conversation"] == str(conversation.uuid) and line["source"] == source.name
    assert "1 branch (1 message) not on the active path" in line["omitted"]
    assert isinstance(line["document"], list)


def test_input_format_filters_on_the_format_a_conversation_came_in(source: Any, reader: APIClient) -> None:
    make_conversation(source)
    ingest(source, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "openai")

    lines = ndjson(reader.get("/api/v1/export/?format=chat_history&input_format=openai"))

    assert [[m["content"] for m in line["chat_history"]] for line in lines] == [["hi", "hello"]]


def test_bulk_export_streams_past_one_batch_in_a_constant_number_of_queries(
    source: Any, django_assert_num_queries: Any
) -> None:
    for number in range(7):
        make_conversation(source, chat_id=f"chat-{number}", n_messages=4)
    queryset = Conversation.objects.all()

    # Batches of 3, 3 and 1; each: conversations, messages, calls, artifacts, feedback.
    with django_assert_num_queries(3 * 5):
        items = list(exports.iter_canonical(queryset, batch_conversations=3))

    assert len(items) == 7 and len({item.conversation.pk for item in items}) == 7


def test_bulk_export_rejects_an_invalid_filter(reader: APIClient) -> None:
    response = reader.get("/api/v1/export/?format=openai&score=7")

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/score"


def test_bulk_export_is_audited_with_its_filters_and_count(source: Any, reader: APIClient) -> None:
    make_conversation(source)

    ndjson(reader.get("/api/v1/export/?format=openai&status=unreviewed&input_format=chat_document"))

    event = AuditEvent.objects.get(action="conversation.exported")
    assert event.after == {
        "format": "openai",
        "filters": {"status": "unreviewed", "input_format": "chat_document"},
        "count": 1,
    }


def test_a_source_key_bulk_exports_only_its_own_source(
    source: Any, other_source: Any, ingest_client: APIClient
) -> None:
    mine = make_conversation(source)
    make_conversation(other_source)

    lines = ndjson(ingest_client.get("/api/v1/export/?format=chat_document"))

    assert [line["chat_id"] for line in lines] == [mine.external_id]
    event = AuditEvent.objects.get(action="conversation.exported")
    assert event.actor is None and event.actor_username == f"source:{source.name}"


# --- training JSONL ---


def _reviewed(source: Any, reviewer: Any, *, score: int, chat_id: str, correction: str = "") -> Conversation:
    conversation = make_conversation(source, chat_id=chat_id, n_messages=5)  # ends with an assistant answer
    feedback_submit(
        author=reviewer,
        conversation=conversation,
        message=last_assistant(conversation),
        score=score,
        labels=[Label.objects.get(name="helpful")] if score == 1 else [],
        correction=correction,
    )
    conversation_set_review_status(actor=reviewer, conversation=conversation, status="reviewed")
    return conversation


def test_training_export_applies_corrections_and_says_where_each_line_came_from(
    source: Any, reviewer: Any, reader: APIClient
) -> None:
    make_labels("helpful")
    corrected = _reviewed(source, reviewer, score=1, chat_id="good", correction="Lower the primer concentration.")

    [line] = ndjson(reader.get("/api/v1/export/?format=training"))

    assert line["messages"][-1] == {"role": "assistant", "content": "Lower the primer concentration."}
    assert line["tools"][0]["function"]["name"] == "airalogy_search"
    assert any(m.get("tool_calls") for m in line["messages"])
    feedback = corrected.feedback.get()
    assert line["metadata"]["conversation"] == str(corrected.uuid)
    assert line["metadata"]["source"] == source.name
    assert line["metadata"]["feedback"] == [str(feedback.uuid)]
    assert line["metadata"]["corrections"] == [str(feedback.uuid)]


def test_training_export_selects_by_score_label_and_status(source: Any, reviewer: Any, reader: APIClient) -> None:
    make_labels("helpful")
    good = _reviewed(source, reviewer, score=1, chat_id="good")
    _reviewed(source, reviewer, score=-1, chat_id="bad")
    make_conversation(source, chat_id="unreviewed")

    def selected(query: str) -> list[str]:
        return [
            line["metadata"]["conversation"] for line in ndjson(reader.get(f"/api/v1/export/?format=training&{query}"))
        ]

    assert selected("score=1") == [str(good.uuid)]
    assert selected("label=helpful") == [str(good.uuid)]
    assert len(selected("status=reviewed")) == 2
    assert len(selected("status=unreviewed")) == 1


def test_training_export_leaves_uncorrected_answers_as_they_were(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=5)

    [line] = ndjson(reader.get("/api/v1/export/?format=training"))

    assert line["messages"][-1]["content"] == last_assistant(conversation).text
    assert line["metadata"]["feedback"] == [] and line["metadata"]["corrections"] == []


# --- the command ---


def test_the_command_writes_the_same_lines_to_a_file_and_audits(source: Any, tmp_path: Any) -> None:
    make_conversation(source, model="qwen3.5-flash", chat_id="kept")
    make_conversation(source, model="other", chat_id="filtered-out")
    output = tmp_path / "out.ndjson"
    stderr = StringIO()

    call_command(
        "export_conversations",
        "--format",
        "chat_document",
        "--model",
        "qwen3.5-flash",
        "--output",
        str(output),
        stderr=stderr,
    )

    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["chat_id"] for line in lines] == ["kept"]
    event = AuditEvent.objects.get(action="conversation.exported")
    assert event.after is not None
    assert event.after["filters"] == {"model": "qwen3.5-flash"} and event.after["count"] == 1


def test_the_command_writes_training_jsonl(source: Any, reviewer: Any, tmp_path: Any) -> None:
    make_labels("helpful")
    _reviewed(source, reviewer, score=1, chat_id="good", correction="Corrected.")
    make_conversation(source, chat_id="unreviewed")
    output = tmp_path / "train.jsonl"

    call_command(
        "export_conversations", "--training", "--status", "reviewed", "--output", str(output), stderr=StringIO()
    )

    [line] = [json.loads(line) for line in output.read_text().splitlines()]
    assert line["messages"][-1]["content"] == "Corrected."


def test_the_command_refuses_an_invalid_filter_or_no_format(tmp_path: Any) -> None:
    with pytest.raises(CommandError, match="score"):
        call_command("export_conversations", "--format", "openai", "--score", "9", stderr=StringIO())
    with pytest.raises(CommandError):
        call_command("export_conversations", stderr=StringIO())
