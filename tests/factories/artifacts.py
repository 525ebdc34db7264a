"""Record QA documents that inject one protocol with a payload of our choosing: the artifact pages and API tests
build "a protocol injected with two different payloads into three conversations" from them."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.factories.documents import load_fixture

PROTOCOL = "airalogy.id.lab.example.protocol.v.0.0.1"  # seed 001's
FIRST_MARKDOWN = "# Plasmid miniprep\n\n1. Pellet 3 mL overnight culture.\n2. Elute in 50 µL EB."
SECOND_MARKDOWN = "# Plasmid miniprep\n\n1. Pellet 5 mL overnight culture.\n2. Elute in 50 µL EB.\n3. Measure."


def protocol_document(chat_id: str, markdown: str, *, artifact_id: str = PROTOCOL) -> dict[str, Any]:
    """Seed 001 under ``chat_id``, its protocol resolved with ``markdown`` (and listed by its context)."""
    document: dict[str, Any] = copy.deepcopy(load_fixture("record_qa/seed_protocol_injection.json"))
    document["chat_id"] = chat_id
    document["context"]["inject_airalogy_protocols"]["airalogy_protocol_ids"] = [artifact_id]
    call = document["main_messages"][1]["tool_calls"][0]
    call["function"]["arguments"] = json.dumps({"airalogy_protocol_ids": [artifact_id]})
    tool = document["main_messages"][2]
    content = json.loads(tool["content"])
    content["airalogy_protocols"][0]["airalogy_protocol_id"] = artifact_id
    content["airalogy_protocols"][0]["markdown"] = markdown
    tool["content"] = json.dumps(content)
    return document


def two_versions_in_three_conversations() -> list[dict[str, Any]]:
    """The issue's case: conversations one and two got the first payload, conversation three the second."""
    return [
        protocol_document("chat-one", FIRST_MARKDOWN),
        protocol_document("chat-two", FIRST_MARKDOWN),
        protocol_document("chat-three", SECOND_MARKDOWN),
    ]


def ingested(client: Any, body: Any) -> str:
    """POST a document to the ingest API with a source's client; the uuid of the conversation it went to."""
    response = client.post("/api/v1/ingest/", data=json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 201), response.json()
    conversation: str = response.json()["conversation"]
    return conversation


def page(client: Any, url: str) -> str:
    """The HTML of a page that must answer 200."""
    response = client.get(url)
    assert response.status_code == 200
    return str(response.content.decode())


def section(body: str, heading_id: str) -> str:
    """The HTML of the section a heading (by id) opens."""
    start = body.index(f'id="{heading_id}"')
    return body[start : body.find("</section>", start)]
