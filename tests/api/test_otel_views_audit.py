"""The audit table's OpenTelemetry path (chats.api.otel_views, chats.services.otel): traces sent by a source's key
write the ingestion's event for each conversation created or changed, and none for a resend; the model calls kept
beside them are derived from the ingestion and write none of their own. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, ModelCall, Source
from tests.factories import otlp
from tests.security.audit_paths import (
    World,
    WritePath,
    check_write_path,
    declared_in,
    expect,
    ingest_state,
    make_world,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


def _send(w: World, body: dict[str, Any]) -> Any:
    response = w.api().post("/api/v1/otel/v1/traces", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


@write_path(
    "POST api:otel-traces",
    "service otel_traces_ingest",
    "service conversations_ingest_bulk",
    "service model_calls_record",
)
def otel_traces_create_a_conversation_once(w: World) -> list[dict[str, Any]]:
    first, _ = otlp.weather_chat(**{"gen_ai.conversation.id": "otel-audit"})
    body = otlp.request(first)
    result = _send(w, body)["results"][0]
    assert _send(w, body)["results"][0]["outcome"] == "unchanged"  # a resend: no event
    conversation = Conversation.objects.get(external_id="otel-audit")
    assert ModelCall.objects.filter(conversation=conversation).count() == 1
    after = ingest_state(
        conversation,
        external_id="otel-audit",
        format="chat_document",
        messages_added=3,
        receipt=result["receipt"],
        api_key=w.key_prefix,
    )
    return [
        expect(
            "conversation.created",
            f"source:{w.source.name}",
            "conversation",
            conversation.uuid,
            after=after,
            conversation=conversation.uuid,
        )
    ]


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
