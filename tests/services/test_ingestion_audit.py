"""The audit table's ingestion paths (chats.services.ingestion, the bulk writer and the ingest queue): ingestion by a
source's key writes one event per conversation created or changed, none for a no-op, whether one document at a
time, in bulk, or in bulk by a worker. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import TestCase

from chats.models import AuditEvent, Conversation, IngestionReceipt, Source
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.ingestion import conversation_ingest
from tests.factories.poison import MARKER, refuse_in_database
from tests.security.audit_paths import (
    FIRST_TURN,
    World,
    WritePath,
    chat,
    check_write_path,
    declared_in,
    expect,
    ingest_state,
    ingested,
    make_world,
    stored,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- Ingestion by a source's key: one event per conversation created or changed, none for a no-op


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_creates_a_conversation(w: World) -> list[dict[str, Any]]:
    response = w.ingest(chat(*FIRST_TURN, chat_id="new-one"))
    assert response.status_code == 201
    return [
        ingested(
            w, "conversation.created", response, None, external_id="new-one", format="chat_document", messages_added=2
        )
    ]


@write_path(
    "POST api:ingest", "service conversation_ingest", "service conversation_store", "service plan_apply_changes"
)
def api_ingest_appends_to_a_conversation(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat)
    response = w.ingest(chat(*FIRST_TURN, ("user", "And now?"), ("assistant", "Raise the annealing temperature.")))
    assert response.status_code == 200
    return [ingested(w, "conversation.appended", response, before, messages_added=2)]


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_branches_a_conversation(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat)
    response = w.ingest(chat(FIRST_TURN[0], ("assistant", "Contamination.")))
    assert response.status_code == 200
    assert ingest_state(w.chat)["branch_count"] == 1
    return [ingested(w, "conversation.branched", response, before, messages_added=1)]


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_changes_a_conversations_title(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat, title="Primers")
    response = w.ingest(chat(*FIRST_TURN, title="Primer dimers"))
    assert response.status_code == 200
    return [ingested(w, "conversation.updated", response, before, title="Primer dimers", messages_added=0)]


PROTOCOL = "airalogy.id.lab.demo.project.pcr.protocol.pcr_basics.v.0.0.1"


def _record_qa(*, enabled: bool) -> dict[str, Any]:
    """A Record QA document injecting a protocol, whose context enables protocols or not."""
    call = {"name": "inject_airalogy_protocols", "arguments": json.dumps({"airalogy_protocol_ids": [PROTOCOL]})}
    return {
        "chat_id": "audit-record-qa",
        "context": {"inject_airalogy_protocols": {"enabled": enabled, "airalogy_protocol_ids": [PROTOCOL]}},
        "main_messages": [
            {"role": "user", "content": "Explain this protocol."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_p", "type": "function", "function": call}],
            },
            {
                "role": "tool",
                "tool_call_id": "call_p",
                "content": json.dumps({"airalogy_protocols": [{"id": PROTOCOL}]}),
            },
            {"role": "assistant", "content": "It amplifies DNA."},
        ],
    }


@write_path(
    "POST api:ingest",
    "service conversation_ingest",
    "service conversation_store",
    "service plans_rewrite_verdicts",
    "service plan_apply_changes",
)
def api_ingest_judges_the_injections_again_when_the_context_changes(w: World) -> list[dict[str, Any]]:
    disabled, enabled = _record_qa(enabled=False), _record_qa(enabled=True)
    first = w.ingest(disabled)
    assert first.status_code == 201
    created = ingested(
        w,
        "conversation.created",
        first,
        None,
        external_id="audit-record-qa",
        format="record_qa",
        messages_added=4,
        policy_violation=True,
    )
    conversation = Conversation.objects.get(uuid=first.json()["conversation"])
    before = ingest_state(conversation, injection_context=disabled["context"], policy_violation=True)
    second = w.ingest(enabled)
    assert second.status_code == 200
    after = {"injection_context": enabled["context"], "policy_violation": False, "messages_added": 0}
    return [created, ingested(w, "conversation.updated", second, before, **after)]


@write_path("POST api:ingest", "service conversation_ingest")
def api_ingest_of_a_document_that_changes_nothing_writes_no_event(w: World) -> list[dict[str, Any]]:
    response = w.ingest(w.chat_document)
    assert (response.status_code, response.json()["outcome"]) == (200, "unchanged")
    return []


@write_path("POST api:ingest", "service conversation_ingest", "service receipt_reject_raw")
def api_ingest_of_refused_documents_writes_no_event(w: World) -> list[dict[str, Any]]:
    not_json = w.api().post("/api/v1/ingest/", data=b"{oops", content_type="application/json")
    no_messages = w.ingest({"chat_id": "empty", "main_messages": []})
    assert (not_json.status_code, no_messages.status_code) == (400, 400)
    return []


@write_path("POST api:ingest-bulk", "service line_reject", "service receipt_reject_raw")
def api_bulk_ndjson_line_that_is_not_json_writes_no_event(w: World) -> list[dict[str, Any]]:
    response = w.api().post("/api/v1/ingest/bulk/", data=b"{oops\n", content_type="application/x-ndjson")
    assert response.status_code == 200 and response.json()["results"][0]["outcome"] == "rejected"
    return []


def _bulk_ingest(w: World, query: str) -> list[dict[str, Any]]:
    """One event per conversation a bulk request created or changed, none for one it left unchanged; the same
    whether the request stores the documents (sync) or a worker does after it (async)."""
    before = ingest_state(w.chat)
    documents = [
        chat(*FIRST_TURN, chat_id="bulk-1"),
        chat(*FIRST_TURN, ("user", "Sure?"), ("assistant", "Yes."), chat_id="bulk-2"),
        chat(*FIRST_TURN, ("user", "And now?"), ("assistant", "Raise it.")),  # appends to w.chat
        w.chat_document,  # unchanged: no event
    ]
    # The test's transaction never commits: this plays the commit, after which an async request's task runs.
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = w.api().post(
            f"/api/v1/ingest/bulk/{query}", data=json.dumps(documents), content_type="application/json"
        )
    assert response.status_code == (202 if "async" in query else 200)
    receipts = [IngestionReceipt.objects.get(uuid=item["receipt"]) for item in response.json()["results"]]
    assert [r.outcome for r in receipts] == ["created", "created", "updated", "unchanged"]
    events = []
    for receipt, added in zip(receipts[:2], (2, 4), strict=True):
        assert receipt.conversation is not None
        conversation = receipt.conversation
        after = ingest_state(
            conversation,
            external_id=receipt.external_id,
            format="chat_document",
            messages_added=added,
            receipt=str(receipt.uuid),
            api_key=w.key_prefix,
        )
        events.append(
            expect(
                "conversation.created",
                f"source:{w.source.name}",
                "conversation",
                conversation.uuid,
                after=after,
                conversation=conversation.uuid,
            )
        )
    after = ingest_state(w.chat, messages_added=2, receipt=str(receipts[2].uuid), api_key=w.key_prefix)
    events.append(
        expect(
            "conversation.appended",
            f"source:{w.source.name}",
            "conversation",
            w.chat.uuid,
            before=before,
            after=after,
            conversation=w.chat.uuid,
        )
    )
    return events


@write_path(
    "POST api:ingest-bulk",
    "service conversations_ingest_bulk",
    "service conversation_store",
    "service plan_apply_changes",
)
def api_bulk_ingest_writes_one_event_per_conversation(w: World) -> list[dict[str, Any]]:
    return _bulk_ingest(w, "")


@write_path(
    "POST api:ingest-bulk",
    "service receipts_enqueue",
    "service queued_send",
    "service queued_receipts_ingest",
    "service conversations_ingest_bulk",
    "service receipts_complete",
)
def api_async_bulk_ingest_writes_the_same_events_once_a_worker_applies_it(w: World) -> list[dict[str, Any]]:
    return _bulk_ingest(w, "?async=true")


@write_path(
    "POST api:ingest-bulk",
    "service receipts_queued_again_on_error",
    "service rejection_issue",
    "service failure_issue",
    "service queued_receipts_fail",
    postgres=True,
)
def api_async_bulk_with_a_poison_document_writes_the_events_of_the_others_only(w: World) -> list[dict[str, Any]]:
    # The poison's receipt cannot be completed (a real trigger refuses it): its chunk fails whole, then each
    # receipt is applied alone, and the poison is rejected by queued_receipts_fail, with no event.
    refuse_in_database("chats_ingestionreceipt", on="UPDATE", column="external_id")
    documents = [chat(*FIRST_TURN, chat_id="bulk-1"), chat(*FIRST_TURN, chat_id=f"{MARKER}-1")]
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = w.api().post(
            "/api/v1/ingest/bulk/?async=true", data=json.dumps(documents), content_type="application/json"
        )
    good, poison = (IngestionReceipt.objects.get(uuid=item["receipt"]) for item in response.json()["results"])
    assert (good.outcome, poison.outcome) == ("created", "rejected")
    assert "poison marker refused" in poison.errors[0]["message"]
    assert good.conversation is not None
    after = ingest_state(
        good.conversation,
        external_id="bulk-1",
        format="chat_document",
        messages_added=2,
        receipt=str(good.uuid),
        api_key=w.key_prefix,
    )
    conversation = good.conversation.uuid
    return [
        expect(
            "conversation.created",
            f"source:{w.source.name}",
            "conversation",
            conversation,
            after=after,
            conversation=conversation,
        )
    ]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)


@pytest.mark.postgres  # elsewhere the bulk endpoint takes the ordinary path
def test_the_bulk_fast_path_writes_the_events_the_ordinary_path_writes(world: World) -> None:
    documents = [chat(*FIRST_TURN, chat_id=f"same-{n}") for n in range(3)]
    ordinary, fast = Source.objects.create(name="ordinary"), Source.objects.create(name="fast")
    for document in documents:
        conversation_ingest(source=ordinary, document=document)
    conversations_ingest_bulk(source=fast, documents=documents)

    def events_of(source: Source) -> list[dict[str, Any]]:
        rows = stored(AuditEvent.objects.filter(actor_username=f"source:{source.name}").order_by("target_id"))
        for row in rows:
            row["after"].pop("receipt")
            row["target_id"] = row["conversation_uuid"] = None
        return sorted(rows, key=lambda row: row["after"]["external_id"])

    assert len(events_of(ordinary)) == 3
    assert [row | {"actor_username": ""} for row in events_of(fast)] == [
        row | {"actor_username": ""} for row in events_of(ordinary)
    ]
