"""The audit table's queue rule paths (chats.services.queue_rules): a lead creates, changes, deletes and runs a
queue's rules, and ingestion adds what a rule takes. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Queue, QueueRule, Source
from chats.services.audit import audit_scope
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
    review_queue,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- Queue rules (the lead is the admin)


def _review_rule(w: World, queue: Queue, rate: str = "1") -> QueueRule:
    """A rule of the queue taking every conversation (its own event is not the path's)."""
    with audit_scope():
        return QueueRule.objects.create(
            queue=queue, name="Everything", filters={}, sample_rate=Decimal(rate), created_by=w.admin
        )


def _rule_state(queue: Queue, **values: Any) -> dict[str, Any]:
    return {"queue": queue.pk, "name": "Everything", "filters": {}, "sample_rate": "1.0000", "enabled": True} | values


@write_path("POST api:queue-rules", "service rule_create")
def api_creates_a_queue_rule(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    body = {"name": "Tools", "filters": {"has_tool_calls": "true"}, "sample_rate": 0.5}
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/rules/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201
    after = _rule_state(queue, name="Tools", filters={"has_tool_calls": "true"}, sample_rate="0.5000")
    return [expect("queue_rule.created", w.admin, "queue_rule", response.json()["id"], after=after)]


@write_path("PATCH api:queue-rule", "service rule_update")
def api_changes_a_queue_rule(w: World) -> list[dict[str, Any]]:
    rule = _review_rule(w, review_queue(w))
    response = w.api(w.admin).patch(
        f"/api/v1/queues/{rule.queue_id}/rules/{rule.pk}/",
        data=json.dumps({"sample_rate": 0.25, "enabled": True}),
        content_type="application/json",
    )
    assert response.status_code == 200
    before, after = {"sample_rate": "1.0000"}, {"sample_rate": "0.2500"}
    return [expect("queue_rule.updated", w.admin, "queue_rule", rule.pk, before=before, after=after)]


@write_path("DELETE api:queue-rule", "service rule_delete")
def api_deletes_a_queue_rule(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    rule = _review_rule(w, queue)
    assert w.api(w.admin).delete(f"/api/v1/queues/{queue.pk}/rules/{rule.pk}/").status_code == 204
    return [expect("queue_rule.deleted", w.admin, "queue_rule", rule.pk, before=_rule_state(queue))]


@write_path(
    "POST api:queue-rule-run",
    "service rule_run_request",
    "service task_send",
    "service rule_run_execute",
    "service rule_run",
    "service queue_add_conversation_ids",
)
def api_runs_a_queue_rule(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    rule = _review_rule(w, queue)
    response = w.api(w.admin).post(f"/api/v1/queues/{queue.pk}/rules/{rule.pk}/run/")
    run = response.json()
    assert (response.status_code, run["state"], run["added"]) == (202, "done", 1)  # the chat; the other was in
    return [
        expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1, "rule": rule.pk}),
        expect("queue_rule.ran", w.admin, "queue_rule", rule.pk, after={"added": 1, "run": run["id"]}),
    ]


@write_path(
    "POST api:ingest", "service conversation_store", "service rules_apply", "service queue_add_conversation_ids"
)
def api_ingest_adds_what_a_queue_rule_takes(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    rule = _review_rule(w, queue)
    response = w.ingest(chat(*FIRST_TURN, chat_id="ruled"))
    assert response.status_code == 201
    return [
        ingested(
            w, "conversation.created", response, None, external_id="ruled", format="chat_document", messages_added=2
        ),
        expect("queue.items_added", f"source:{w.source.name}", "queue", queue.pk, after={"added": 1, "rule": rule.pk}),
    ]


# Elsewhere the bulk endpoint takes the ordinary path, document by document.
@write_path(
    "POST api:ingest-bulk",
    "service conversations_ingest_bulk",
    "service rules_apply",
    "service queue_add_conversation_ids",
    postgres=True,
)
def api_bulk_ingest_adds_what_a_queue_rule_takes_at_once(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    rule = _review_rule(w, queue)
    documents = [chat(*FIRST_TURN, chat_id="ruled-1"), chat(*FIRST_TURN, chat_id="ruled-2")]
    response = w.api().post("/api/v1/ingest/bulk/", data=json.dumps(documents), content_type="application/json")
    assert response.status_code == 200
    events = []
    for result in response.json()["results"]:
        conversation = Conversation.objects.get(uuid=result["conversation"])
        after = ingest_state(
            conversation,
            external_id=result["external_id"],
            format="chat_document",
            messages_added=2,
            receipt=result["receipt"],
            api_key=w.key_prefix,
        )
        source = f"source:{w.source.name}"
        events.append(
            expect(
                "conversation.created",
                source,
                "conversation",
                conversation.uuid,
                after=after,
                conversation=conversation.uuid,
            )
        )
    return [
        *events,
        expect("queue.items_added", f"source:{w.source.name}", "queue", queue.pk, after={"added": 2, "rule": rule.pk}),
    ]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
