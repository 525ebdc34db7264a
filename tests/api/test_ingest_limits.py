"""The bulk endpoint's item limit is checked in the bytes, before any document is decoded (the counters that check
it, chats.strict_json's, are tested in tests/test_strict_json.py); and a conversation over a per-conversation limit is refused."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from chats import strict_json
from chats.models import Conversation, IngestionReceipt

BULK = "/api/v1/ingest/bulk/"
HISTORY = [{"role": "user", "content": "Who are you?"}, {"role": "assistant", "content": "Airalogy Masterbrain."}]


def document(number: int) -> dict[str, Any]:
    return {"conversation_id": str(number), "chat_history": HISTORY}


def post_array(client: Any, body: bytes | str) -> Any:
    return client.post(BULK, data=body, content_type="application/json")


def post_ndjson(client: Any, body: bytes | str) -> Any:
    return client.post(BULK, data=body, content_type="application/x-ndjson")


@pytest.fixture
def limit_of_three(settings: Any) -> int:
    settings.MASTERBRAIN_MAX_BULK_ITEMS = 3
    return 3


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test whose request decodes a document."""

    def refuse(data: str | bytes) -> Any:
        raise AssertionError("a document was decoded before the item limit was checked")

    monkeypatch.setattr(strict_json, "loads", refuse)


TOO_MANY = {"path": "", "message": "more than 3 documents: at most 3 per bulk request"}


# --- the endpoint ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_array_over_the_limit_gets_413_and_stores_nothing(ingest_client, limit_of_three):
    response = post_array(ingest_client, json.dumps([document(n) for n in range(4)]))

    assert response.status_code == 413
    assert response.json() == {"errors": [TOO_MANY]}
    assert Conversation.objects.count() == 0 and IngestionReceipt.objects.count() == 0


@pytest.mark.django_db
def test_an_array_over_the_limit_is_refused_before_it_is_decoded(ingest_client, limit_of_three, no_decoding):
    response = post_array(ingest_client, json.dumps([document(n) for n in range(4)]))

    assert response.status_code == 413 and response.json() == {"errors": [TOO_MANY]}


@pytest.mark.django_db
def test_ndjson_over_the_limit_gets_413_before_any_line_is_decoded(ingest_client, limit_of_three, no_decoding):
    body = "\n".join(json.dumps(document(n)) for n in range(4))

    response = post_ndjson(ingest_client, body)

    assert response.status_code == 413 and response.json() == {"errors": [TOO_MANY]}
    assert Conversation.objects.count() == 0 and IngestionReceipt.objects.count() == 0


@pytest.mark.django_db
def test_megabytes_of_short_invalid_lines_get_413_at_once(ingest_client, settings, no_decoding):
    settings.MASTERBRAIN_MAX_BULK_ITEMS = 1000
    body = b"x\n" * (4 * 1024 * 1024)  # 8 MiB: 4 million lines that are not JSON
    started = time.perf_counter()

    response = post_ndjson(ingest_client, body)

    assert response.status_code == 413
    assert response.json()["errors"][0]["path"] == ""
    assert time.perf_counter() - started < 10  # it was 44 s and 1 GB when every line was decoded first
    assert IngestionReceipt.objects.count() == 0


@pytest.mark.django_db
def test_an_array_of_exactly_the_limit_passes_the_check(ingest_client, limit_of_three):
    response = post_array(ingest_client, json.dumps([document(n) for n in range(3)]))

    assert response.status_code == 200
    assert [result["outcome"] for result in response.json()["results"]] == ["created"] * 3


@pytest.mark.django_db
def test_ndjson_blank_lines_are_not_documents(ingest_client, limit_of_three):
    lines = [json.dumps(document(n)) for n in range(3)]
    body = "\n \n".join(lines) + "\r\n\t\n"

    response = post_ndjson(ingest_client, body)

    assert response.status_code == 200 and len(response.json()["results"]) == 3


@pytest.mark.django_db
def test_commas_and_brackets_inside_strings_are_not_items(ingest_client, limit_of_three):
    tricky = [
        {**document(1), "title": 'a, b], [c", {d}'},
        {**document(2), "tags": [[1, 2], {"x": [3, ",", "]"]}], "note": "\\"},
        {**document(3), "note": '\\", "' * 10},
    ]

    assert post_array(ingest_client, json.dumps(tricky)).status_code == 200
    assert post_array(ingest_client, json.dumps([*tricky, document(4)])).status_code == 413


@pytest.mark.django_db
def test_a_body_that_is_not_an_array_is_still_a_400_with_a_receipt(ingest_client, limit_of_three):
    response = post_array(ingest_client, json.dumps(document(1)))

    assert response.status_code == 400 and response.json()["errors"][0]["path"] == ""
    assert IngestionReceipt.objects.filter(uuid=response.json()["receipt"]).exists()


@pytest.mark.django_db
def test_a_malformed_array_within_the_limit_is_left_to_the_decoder(ingest_client, limit_of_three):
    response = post_array(ingest_client, '[{"chat_history": []}, "unterminated')

    assert response.status_code == 400 and "not valid JSON" in response.json()["errors"][0]["message"]


def _calls(count: int, name: str = "search") -> list[dict[str, Any]]:
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": '{"airalogy_protocol_ids": []}'}}
        for n in range(count)
    ]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}]


def _injection_result(count: int) -> dict[str, Any]:
    protocols = [{"airalogy_protocol_id": f"airalogy.id.protocol.p{n}"} for n in range(count)]
    return {"role": "tool", "tool_call_id": "c0", "content": json.dumps({"airalogy_protocols": protocols})}


@pytest.mark.parametrize(
    ("setting", "document", "what"),
    [
        ("MASTERBRAIN_MAX_MESSAGES", [{"role": "user", "content": str(n)} for n in range(4)], "4 messages"),
        ("MASTERBRAIN_MAX_TOOL_CALLS", _calls(4), "4 tool calls"),
        (
            "MASTERBRAIN_MAX_ARTIFACTS",
            [*_calls(1, "inject_airalogy_protocols"), _injection_result(4)],
            "4 injected artifacts",
        ),
    ],
)
def test_a_conversation_over_a_per_conversation_limit_gets_413_with_a_receipt(
    ingest_client, settings, setting, document, what
):
    setattr(settings, setting, 3)

    one = ingest_client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")
    bulk = ingest_client.post("/api/v1/ingest/bulk/", data=json.dumps([document]), content_type="application/json")

    assert one.status_code == 413
    assert one.json()["errors"] == [{"path": "", "message": f"{what}: at most 3 per conversation."}]
    assert bulk.status_code == 200 and bulk.json()["results"][0]["outcome"] == "rejected"
    assert not Conversation.objects.exists()
    assert IngestionReceipt.objects.filter(outcome="rejected").count() == 2
