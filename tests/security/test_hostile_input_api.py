"""Hostile input through the API, without a browser: what the ingest API refuses (a 4xx naming a JSON path, never a
5xx, nothing stored), and deep JSON it stores whole and gives back.

The same payloads on the pages, in Chromium: tests/browser/test_hostile_input.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, InjectedArtifact, Message, ToolCall
from tests.factories import hostile
from tests.security.raw_ingest import BULK, assert_refused_with_paths, post

pytestmark = pytest.mark.django_db

# --------------------------------------------------------------------------------------------------------------
# What the API refuses: 4xx with a JSON path, never 5xx


def _chat(content: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {"conversation_id": "refused", "chat_history": [{"role": "user", "content": content}], **extra}


REFUSED_BODIES: dict[str, tuple[bytes, str | None]] = {
    # name: (body, the path the error must name, or None when only a path of some kind is expected)
    "invalid UTF-8": (b'{"chat_history": [{"role": "user", "content": "\xff\xfe\xfd"}]}', ""),
    "overlong UTF-8 for <": (b'{"chat_history": [{"role": "user", "content": "\xc0\xbcscript\xc0\xbe"}]}', ""),
    # json.loads reads bytes with "surrogatepass": the surrogate is found in the decoded text, at its path.
    "UTF-8 encoded surrogate": (
        b'{"chat_history": [{"role": "user", "content": "\xed\xa0\x80"}]}',
        "/chat_history/0/content",
    ),
    "Latin-1 body": ('{"chat_history": [{"role": "user", "content": "café"}]}'.encode("latin-1"), ""),
    "raw NUL byte in a string": (b'{"chat_history": [{"role": "user", "content": "a\x00b"}]}', ""),
    "NUL in message text": (json.dumps(_chat("a\u0000b")).encode(), "/chat_history/0/content"),
    "NUL in a title": (
        json.dumps({"chat_id": "x", "title": "a\u0000", "main_messages": [{"role": "user", "content": "hi"}]}).encode(),
        "/title",
    ),
    "NUL in a message name": (
        json.dumps({"chat_history": [{"role": "user", "name": "\u0000", "content": "hi"}]}).encode(),
        "/chat_history/0/name",
    ),
    "NUL in tool arguments": (
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"q": "\u0000"}'}}
                    ],
                },
            ]
        ).encode(),
        "/1/tool_calls/0/function/arguments",
    ),
    "NUL in a metadata key": (json.dumps(_chat(**{"x\u0000y": 1})).encode(), None),
    "unpaired surrogate escape": (
        b'{"chat_history": [{"role": "user", "content": "\\ud800"}]}',
        "/chat_history/0/content",
    ),
    "nesting 100,000 deep in metadata": (
        f'{{"chat_history": [{{"role": "user", "content": "hi"}}], "x": {hostile.nested_text(100_000)}}}'.encode(),
        None,
    ),
    "nesting 100,000 deep at the top": (hostile.nested_text(100_000).encode(), None),
    "a number beyond a double": (b'{"chat_history": [{"role": "user", "content": "hi"}], "x": 1e999}', None),
    "not JSON at all": (b"<script>alert(1)</script>", ""),
}


@pytest.mark.parametrize("name", list(REFUSED_BODIES))
def test_the_api_refuses_what_it_cannot_store_with_a_path(ingest_key: str, name: str) -> None:
    body, path = REFUSED_BODIES[name]
    errors = assert_refused_with_paths(post(ingest_key, body))
    if path is not None:
        assert path in [error["path"] for error in errors], errors
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("name", ["invalid UTF-8", "NUL in message text", "nesting 100,000 deep in metadata"])
def test_bulk_ingest_refuses_the_same_items_and_stores_the_others(ingest_key: str, name: str) -> None:
    body, _ = REFUSED_BODIES[name]
    good = json.dumps(_chat("fine", conversation_id="good")).encode()
    response = post(ingest_key, good + b"\n" + body + b"\n", path=BULK, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content[:300]
    first, second = response.json()["results"]
    assert first["outcome"] == "created"
    assert second["index"] == 1 and second["outcome"] == "rejected"
    # Every error of the item is under its index: "/1" for a line that does not decode, "/1/..." inside one.
    assert second["errors"], second
    assert all(error["path"] == "/1" or error["path"].startswith("/1/") for error in second["errors"]), second


def test_a_body_over_the_limit_is_refused_with_413(ingest_key: str, settings: Any) -> None:
    settings.MASTERBRAIN_MAX_BODY_BYTES = 1024
    response = post(ingest_key, json.dumps(_chat("W" * 2000)))
    assert response.status_code == 413, response.content[:300]
    assert_refused_with_paths(response)


# --------------------------------------------------------------------------------------------------------------
# Deep JSON: stored whole, and given back at its place by the API


# Where the API's conversation detail (?branch=all) gives back the value nested in each of hostile.DEEP_PLACES.
DEEP_VALUE_IN_DETAIL: dict[str, Callable[[dict[str, Any]], Any]] = {
    "metadata": lambda detail: detail["metadata"]["x_deep"],
    "scenario": lambda detail: detail["scenario"],
    "part": lambda detail: detail["messages"][0]["parts"][1]["raw"]["v"],
    "result": lambda detail: json.loads(detail["messages"][3]["text"])["deep"],
    "arguments": lambda detail: detail["messages"][1]["tool_calls"][0]["parsed_arguments"]["deep"],
    "record": lambda detail: detail["artifacts"][0]["payload"]["data"]["deep"],
}


def test_every_deep_place_is_listed() -> None:
    assert set(DEEP_VALUE_IN_DETAIL) == set(hostile.DEEP_PLACES)


@pytest.mark.parametrize("where", hostile.DEEP_PLACES)
def test_deep_json_is_stored_whole_and_given_back_at_its_place(ingest_key: str, reviewer: User, where: str) -> None:
    response = post(ingest_key, hostile.deep_document(hostile.DEEP, where, conversation_id=f"deep-{where}"))

    assert response.status_code == 201, response.content[:300]
    assert (response.json()["outcome"], response.json()["warnings"]) == ("created", [])
    conversation = Conversation.objects.get(uuid=response.json()["conversation"])
    assert Message.objects.filter(conversation=conversation).count() == 5
    assert ToolCall.objects.filter(conversation=conversation).count() == 2
    assert InjectedArtifact.objects.filter(conversation=conversation).count() == 1
    reader = Client()
    reader.force_login(reviewer)
    detail = reader.get(f"/api/v1/conversations/{conversation.uuid}/?branch=all")
    assert detail.status_code == 200
    assert DEEP_VALUE_IN_DETAIL[where](detail.json()) == json.loads(hostile.nested_text(hostile.DEEP))
