"""Hypothesis over the ingest endpoints with the strings that once broke them: lone surrogates, NUL, 300-character
ids, and ids that share their first 255 characters. A bulk body (JSON array or NDJSON) always answers 200 with one
result per item; exactly the items that hold an unstorable string are refused, and every other one is stored; a
single document answers as the same item does in bulk."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chats.models import Conversation

pytestmark = pytest.mark.django_db

API = settings.get_profile("fuzz-api")

UNSTORABLE = ("\ud800", "\udfff", "a\u0000b")
STRINGS = st.one_of(
    st.sampled_from(UNSTORABLE),
    st.sampled_from(["x" * 300, "p" * 255 + "-one", "p" * 255 + "-two", "ok", "<think>" * 40, "</think>" * 40]),
    st.text(max_size=12),
)
IDS = st.one_of(STRINGS.filter(bool), st.uuids().map(str))


def _messages(texts: list[str]) -> list[dict[str, Any]]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(texts)]


def _graph(conversation_id: str, node_ids: list[str], texts: list[str]) -> dict[str, Any]:
    nodes, parent = [], None
    for node_id, text in zip(dict.fromkeys(node_ids), texts, strict=False):
        nodes.append(
            {
                "node_id": node_id,
                "parent_id": parent,
                "message": {"author": {"role": "user"}, "content": {"parts": [text]}},
            }
        )
        parent = node_id
    return {"conversation_id": conversation_id, "nodes": nodes}


TEXTS = st.lists(STRINGS, min_size=1, max_size=4)
DOCUMENTS = st.one_of(
    TEXTS.map(_messages),
    st.builds(lambda i, t: {"conversation_id": i, "chat_history": _messages(t)}, IDS, TEXTS),
    st.builds(lambda i, t: {"chat_id": i, "main_messages": _messages(t)}, IDS, TEXTS),
    st.builds(lambda i, t: {"id": i, "messages": _messages(t)}, IDS, TEXTS),
    st.builds(_graph, IDS, st.lists(IDS, min_size=1, max_size=4), TEXTS),
)


def _unstorable(value: Any) -> bool:
    """Whether any string or key holds a NUL or a lone surrogate, which PostgreSQL cannot store."""
    if isinstance(value, str):
        return "\x00" in value or any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(_unstorable(key) or _unstorable(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_unstorable(item) for item in value)
    return False


@pytest.mark.parametrize("media_type", ["application/json", "application/x-ndjson"])
def test_a_bulk_body_answers_one_result_per_item_and_stores_every_good_one(ingest_client: Any, media_type: str) -> None:
    @API
    @given(documents=st.lists(DOCUMENTS, min_size=1, max_size=6))
    def answers_per_item(documents: list[Any]) -> None:
        if media_type == "application/json":
            body = json.dumps(documents)
        else:
            body = "\n".join(json.dumps(document) for document in documents)

        response = ingest_client.post("/api/v1/ingest/bulk/", data=body, content_type=media_type)

        assert response.status_code == 200, response.content[:500]
        results = response.json()["results"]
        assert [r["index"] for r in results] == list(range(len(documents)))
        for document, result in zip(documents, results, strict=True):
            assert (result["outcome"] == "rejected") == _unstorable(document), (document, result)
            if result["outcome"] != "rejected":
                assert Conversation.objects.filter(uuid=result["conversation"]).exists()
            else:
                assert result["errors"][0]["path"].startswith(f"/{result['index']}")

    answers_per_item()


def test_a_single_document_answers_as_the_same_item_in_bulk(ingest_client: Any) -> None:
    @API
    @given(document=DOCUMENTS)
    def answers_alike(document: Any) -> None:
        one = ingest_client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")

        assert one.status_code == (400 if _unstorable(document) else 200 if one.json()["outcome"] != "created" else 201)
        assert (one.json()["outcome"] == "rejected") == _unstorable(document)

    answers_alike()
