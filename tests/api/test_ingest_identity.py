"""Which conversation a document belongs to (design notes §3), the same through every way in: the single
endpoint, the bulk endpoint as a JSON array and as NDJSON, and the import command."""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.test import APIClient

from chats.models import AuditEvent, Conversation, Feedback, IngestionReceipt, Message, Source
from chats.services.ingestion import conversation_ingest

# engines: id-less documents are serialised by an advisory lock on PostgreSQL only; CI runs this file again on SQLite.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


U1, A1, U2, A2, U3, A3 = (
    user("Why do I see nonspecific PCR bands?"),
    assistant("Possible contamination or primer dimers."),
    user("How do I tell which?"),
    assistant("Run a no-template control."),
    user("And if the control is clean?"),
    assistant("Raise the annealing temperature."),
)

Send = Callable[[Any], dict[str, Any]]


class Channels:
    """Sends one document by one way in and answers with its result (outcome, external_id, warnings, ...)."""

    def __init__(self, client: APIClient, tmp_path: Path) -> None:
        self.client = client
        self.tmp_path = tmp_path
        self.files = 0

    def single(self, document: Any) -> dict[str, Any]:
        response = self.client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")
        body = dict(response.json())
        assert response.status_code == {"created": 201, "rejected": 400}.get(body["outcome"], 200), body
        return body

    def bulk_json(self, document: Any) -> dict[str, Any]:
        response = self.client.post(
            "/api/v1/ingest/bulk/", data=json.dumps([document]), content_type="application/json"
        )
        assert response.status_code == 200, response.content
        return dict(response.json()["results"][0])

    def ndjson(self, document: Any) -> dict[str, Any]:
        response = self.client.post(
            "/api/v1/ingest/bulk/", data=json.dumps(document) + "\n", content_type="application/x-ndjson"
        )
        assert response.status_code == 200, response.content
        return dict(response.json()["results"][0])

    def command(self, document: Any) -> dict[str, Any]:
        self.files += 1
        path = self.tmp_path / f"document-{self.files}.jsonl"
        path.write_text(json.dumps(document) + "\n")
        with contextlib.suppress(CommandError):  # the command exits non-zero when an item is refused
            call_command(
                "import_conversations", str(path), "--source", "masterbrain", "--no-progress", stdout=io.StringIO()
            )
        receipt = IngestionReceipt.objects.latest("id")
        return {"outcome": receipt.outcome, "external_id": receipt.external_id, "warnings": receipt.warnings}


CHANNELS = ("single", "bulk_json", "ndjson", "command")


@pytest.fixture(params=CHANNELS)
def send(request: pytest.FixtureRequest, ingest_client: APIClient, tmp_path: Path) -> Send:
    return getattr(Channels(ingest_client, tmp_path), request.param)  # type: ignore[no-any-return]


def only_conversation() -> Conversation:
    [conversation] = Conversation.objects.all()
    return conversation


def active_texts(conversation: Conversation) -> list[str]:
    return [m.text for m in Message.objects.filter(conversation=conversation, on_active_path=True).order_by("depth")]


# --- documents without an id ----------------------------------------------------------------------------------

IDLESS_SHAPES: dict[str, Callable[[list[dict[str, Any]]], Any]] = {
    "openai": lambda messages: messages,
    "record_qa": lambda messages: {
        "context": {"inject_airalogy_protocols": {"enabled": False, "airalogy_protocol_ids": []}},
        "main_messages": messages,
    },
    "chat_history": lambda messages: {"chat_history": messages},
}


@pytest.mark.parametrize("shape", IDLESS_SHAPES)
def test_a_growing_history_without_an_id_is_one_conversation(send: Send, shape: str) -> None:
    wrap = IDLESS_SHAPES[shape]

    outcomes = [
        send(wrap([U1, A1]))["outcome"],
        send(wrap([U1, A1, U2, A2]))["outcome"],
        send(wrap([U1, A1, U2, A2, U3, A3]))["outcome"],
        send(wrap([U1, A1, U2, A2]))["outcome"],  # a prefix, sent late
        send(wrap([U1, A1, U2, A2, U3, A3]))["outcome"],  # a repeat
    ]

    assert outcomes == ["created", "updated", "updated", "unchanged", "unchanged"]
    conversation = only_conversation()
    assert conversation.external_id_generated and conversation.message_count == 6
    assert active_texts(conversation) == [m["content"] for m in (U1, A1, U2, A2, U3, A3)]


def test_two_chats_that_open_alike_stay_two_conversations(send: Send) -> None:
    send([U1, A1])
    second = send([U1, assistant("Most likely primer dimers.")])

    assert second["outcome"] == "created"
    assert Conversation.objects.count() == 2


def test_the_same_messages_without_an_id_are_recognised_across_formats(send: Send) -> None:
    first = send([U1, A1])
    again = send({"chat_history": [U1, A1]})
    grown = send({"context": {}, "main_messages": [U1, A1, U2, A2]})

    assert (again["outcome"], grown["outcome"]) == ("unchanged", "updated")
    assert again["external_id"] == grown["external_id"] == first["external_id"]
    assert only_conversation().message_count == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_clients_sending_the_same_idless_document_at_once_make_one_conversation() -> None:
    source = Source.objects.create(name="masterbrain")
    document = [U1, A1, U2, A2]
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def client() -> None:
        try:
            barrier.wait()
            outcomes.append(conversation_ingest(source=source, document=document).outcome)
        finally:
            connection.close()

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["created", "unchanged", "unchanged", "unchanged"]
    assert Conversation.objects.count() == 1 and Message.objects.count() == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_versions_of_one_idless_chat_sent_at_once_make_one_conversation() -> None:
    source = Source.objects.create(name="masterbrain")
    versions = [[U1, A1], [U1, A1, U2, A2], [U1, A1, U2, A2, U3, A3], [U1, A1, U2, A2]]
    barrier = threading.Barrier(len(versions))

    def client(document: list[dict[str, Any]]) -> None:
        try:
            barrier.wait()
            conversation_ingest(source=source, document=document)
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(version,)) for version in versions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    conversation = only_conversation()
    assert conversation.message_count == 6 and Message.objects.count() == 6
    assert active_texts(conversation) == [m["content"] for m in (U1, A1, U2, A2, U3, A3)]


# --- explicit ids ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["id", "conversation_id", "thread_id", "chat_id"])
def test_an_envelope_keeps_its_id(send: Send, key: str) -> None:
    result = send({key: f"env-{key}", "messages": [U1, A1]})

    assert result["external_id"] == f"env-{key}"
    conversation = only_conversation()
    assert (conversation.external_id, conversation.external_id_generated) == (f"env-{key}", False)


def test_an_envelope_exports_back_under_the_key_it_came_with(ingest_client: APIClient, reviewer: Any) -> None:
    ingest_client.post(
        "/api/v1/ingest/", data=json.dumps({"id": "env-1", "messages": [U1, A1]}), content_type="application/json"
    )
    reader = APIClient()
    reader.force_authenticate(reviewer)

    exported = reader.get(f"/api/v1/conversations/{only_conversation().uuid}/export/?format=chat_document").json()

    assert exported["id"] == "env-1" and "chat_id" not in exported
    assert [m["content"] for m in exported["messages"]] == [U1["content"], A1["content"]]


def test_ids_are_never_cut_short(send: Send) -> None:
    shared = "x" * 255
    send({"conversation_id": shared + "-first", "chat_history": [U1, A1]})
    send({"conversation_id": shared + "-second", "chat_history": [U1, A1]})
    long_id = "n" * 5000
    graph = send(
        {
            "conversation_id": "graph-with-long-ids",
            "nodes": [
                node(long_id, None, "user", U1["content"]),
                node("node-" + "y" * 300, long_id, "assistant", A1["content"]),
            ],
        }
    )

    assert graph["outcome"] == "created"
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == sorted(
        [shared + "-first", shared + "-second", "graph-with-long-ids"]
    )
    assert Message.objects.filter(key=long_id).exists()
    assert send({"conversation_id": "graph-with-long-ids", "nodes": [node(long_id, None, "user", U1["content"])]})[
        "outcome"
    ] == ("unchanged")


# --- one conversation in several formats ----------------------------------------------------------------------


def node(node_id: str, parent: str | None, role: str, text: str, timestamp: int = 1_700_000_000) -> dict[str, Any]:
    return {
        "node_id": node_id,
        "parent_id": parent,
        "timestamp": timestamp,
        "message": {"id": f"m-{node_id[:20]}", "author": {"role": role, "metadata": {}}, "content": {"parts": [text]}},
    }


def test_history_then_graph_of_the_same_conversation_stores_each_message_once(send: Send) -> None:
    send({"conversation_id": "c-1", "chat_history": [U1, A1]})
    graph = {
        "conversation_id": "c-1",
        "nodes": [
            node("n1", None, "user", U1["content"]),
            node("n2", "n1", "assistant", A1["content"]),
            node("n3", "n2", "user", U2["content"]),
            node("n4", "n3", "assistant", A2["content"], timestamp=1_700_000_100),
        ],
    }

    result = send(graph)
    again = send(graph)

    assert (result["outcome"], again["outcome"]) == ("updated", "unchanged")
    conversation = only_conversation()
    assert conversation.message_count == 4 and conversation.branch_count == 0
    assert active_texts(conversation) == [m["content"] for m in (U1, A1, U2, A2)]
    # The graph's node ids are kept as aliases of the messages the history stored first.
    aliases = dict(Message.objects.filter(conversation=conversation).values_list("text", "aliases"))
    assert aliases[U1["content"]] == ["n1"] and aliases[A2["content"]] == ["n4"]


def test_a_log_of_single_exchanges_continues_after_the_active_message(send: Send) -> None:
    send({"conversation_id": "turns", "chat_history": [U1, A1]})
    second = send({"conversation_id": "turns", "chat_history": [U2, A2]})
    third = send({"conversation_id": "turns", "chat_history": [U3, A3]})

    assert (second["outcome"], third["outcome"]) == ("updated", "updated")
    assert any("continues the conversation" in w["message"] for w in second["warnings"])
    conversation = only_conversation()
    assert conversation.branch_count == 0
    assert active_texts(conversation) == [m["content"] for m in (U1, A1, U2, A2, U3, A3)]
    assert send({"conversation_id": "turns", "chat_history": [U2, A2]})["outcome"] == "unchanged"


# --- imported feedback ----------------------------------------------------------------------------------------


def test_withdrawn_masterbrain_feedback_is_withdrawn_and_audited(send: Send) -> None:
    document = {"chat_id": "scored", "main_messages": [U1, A1], "human_feedback": [{"score": 0}, {"score": -1}]}
    send(document)
    assert Feedback.objects.get().score == -1

    result = send(document | {"human_feedback": [{"score": 0}, {"score": 0}]})

    assert result["outcome"] == "updated"
    assert not Feedback.objects.exists()
    conversation = only_conversation()
    assert (conversation.feedback_count, conversation.score_down) == (0, 0)
    event = AuditEvent.objects.filter(conversation_uuid=conversation.uuid).latest("id")
    assert event.before is not None and event.after is not None
    assert event.after["feedback_withdrawn"] == [{"origin": "masterbrain", "score": -1, "comment": ""}]
    assert event.before["score_down"] == 1 and event.after["score_down"] == 0


# --- a bulk body never fails as a whole -----------------------------------------------------------------------

HOSTILE_ITEMS = [
    [{"role": "user", "content": "\ud800"}],
    {"chat_id": "nul", "main_messages": [user("a\u0000b")]},
    {"conversation_id": "z" * 300, "nodes": [node("q" * 300, None, "user", "long ids")]},
]


@pytest.mark.parametrize("media_type", ["application/json", "application/x-ndjson"])
def test_a_bulk_body_with_bad_items_stores_the_good_ones(ingest_client: APIClient, media_type: str) -> None:
    good = [{"chat_id": f"good-{n}", "main_messages": [U1, assistant(f"answer {n}")]} for n in range(3)]
    documents = [good[0], *HOSTILE_ITEMS, good[1], good[2]]
    if media_type == "application/json":
        body = json.dumps(documents)
    else:
        body = "\n".join(json.dumps(document) for document in documents) + "\n"

    response = ingest_client.post("/api/v1/ingest/bulk/", data=body, content_type=media_type)

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["created", "rejected", "rejected", "created", "created", "created"]
    assert results[1]["errors"][0]["path"] == "/1/0/content"
    assert results[2]["errors"][0]["path"] == "/2/main_messages/0/content"
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {
        "good-0",
        "good-1",
        "good-2",
        "z" * 300,
    }


def test_turns_of_an_idless_chat_in_one_bulk_body_make_one_conversation(ingest_client: APIClient) -> None:
    documents = [[U1, A1], [U1, A1, U2, A2], [U3, A3], [U1, A1, U2, A2, U3, A3]]

    response = ingest_client.post("/api/v1/ingest/bulk/", data=json.dumps(documents), content_type="application/json")

    assert [r["outcome"] for r in response.json()["results"]] == ["created", "updated", "created", "updated"]
    assert Conversation.objects.count() == 2
    longest = Conversation.objects.get(message_count=6)
    assert active_texts(longest) == [m["content"] for m in (U1, A1, U2, A2, U3, A3)]


@pytest.mark.parametrize("index", range(len(HOSTILE_ITEMS)))
def test_an_unstorable_string_is_refused_with_its_path_and_a_long_id_is_stored(send: Send, index: int) -> None:
    result = send(HOSTILE_ITEMS[index])

    if index < 2:
        assert result["outcome"] == "rejected"
        assert not Conversation.objects.exists()
    else:
        assert result["outcome"] == "created"
        assert only_conversation().external_id == "z" * 300
