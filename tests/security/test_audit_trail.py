"""Every state change a person or a key makes writes an audit event: actor, time, target, and before/after.

WRITE_PATHS is the list of write paths. Each is performed through the real stack (the review pages and the admin
with a signed-in Client, the API with APIClient, commands with call_command) and must write exactly the events it
lists. The completeness tests fail when a URL, an admin (add, change, delete, an action, an extra page), a public
function of a chats.services module or a management command is neither covered by an entry nor listed in NOT_WRITES with
the reason it changes nothing audited, and when an entry names something that no longer exists.

On PostgreSQL the audit table is append-only (migration 0005): the last tests check that the ORM, raw SQL and the
admin cannot change or delete an event, and that deleting a user keeps the events they wrote.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json
import pkgutil
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.db.models import Model, signals
from django.test import Client, RequestFactory, TestCase, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter, UUIDConverter
from django.utils import timezone
from rest_framework.test import APIClient

import chats.management.commands
import chats.services
from chats.admin import AuditedModelAdmin
from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    ConversationView,
    Dataset,
    ExportJob,
    Feedback,
    IngestionReceipt,
    Label,
    Lease,
    Message,
    Queue,
    QueueItem,
    QueueRule,
    Resolution,
    Review,
    RubricVersion,
    Source,
)
from chats.services import datasets as dataset_services
from chats.services import labels as label_services
from chats.services import review as review_services
from chats.services.audit import CommandActor, audit_record, audit_scope, audited, in_audited_write
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.labels import label_create
from chats.services.review import conversation_set_review_status
from chats.services.sources import source_get_or_create
from chats.tasks.exports import export_job_execute
from tests.factories import last_assistant, make_conversation

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a quite different horse 42"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


# --------------------------------------------------------------------------------------------------------------
# The world every write path starts from (its own events are written before the test looks)


@dataclass
class World:
    reviewer: User
    admin: User
    other_user: User  # no role, one admin log entry; the admin changes, deletes and sets the password of this one
    source: Source
    raw_key: str
    conversation: Conversation  # a branched conversation (make_conversation)
    feedback: Feedback  # the reviewer's, on the conversation as a whole, labelled "helpful"
    label: Label  # "helpful", in use
    spare_label: Label  # in no feedback: deletable
    spare_source: Source  # no conversations, no keys: deletable
    group: Group  # "Editors", no permissions
    chat: Conversation  # ingested through the API: the document is `chat_document`
    chat_document: dict[str, Any]
    tmp: Path

    @property
    def key_prefix(self) -> str:
        return self.raw_key[3 : 3 + ApiKey.PREFIX_LENGTH]

    def page(self, user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    def api(self, user: User | None = None) -> APIClient:
        """A person's session, or (no user) the source's key."""
        client = APIClient()
        if user is None:
            client.credentials(HTTP_AUTHORIZATION=f"Api-Key {self.raw_key}")
        else:
            client.force_login(user)
        return client

    def ingest(self, document: Any) -> Any:
        return self.api().post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")


def _chat(*turns: tuple[str, str], chat_id: str = "audit-chat", title: str = "Primers") -> dict[str, Any]:
    messages = [{"role": role, "content": text} for role, text in turns]
    return {"chat_id": chat_id, "title": title, "main_messages": messages}


FIRST_TURN = (("user", "Why two bands?"), ("assistant", "Primer dimers."))
# The audited values of the world's feedback.
WORLD_FEEDBACK = {"score": 1, "comment": "", "correction": "", "labels": ["helpful"], "message": None}


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    helpful = label_create(name="helpful", description="Solved it.")
    spare_label = label_create(name="spare", description="Unused.")
    conversation = make_conversation(source, n_messages=5, with_tools=False, branches=1)
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, score=1, labels=[helpful])
    spare_source, _ = source_get_or_create(name="spare-source")
    other_user = User.objects.create_user(username="uma", password=PASSWORD)
    # What the admin did as a staff member goes with them when they are deleted.
    LogEntry.objects.create(
        user=other_user,
        content_type=ContentType.objects.get_for_model(Label),
        object_id=str(helpful.pk),
        object_repr="helpful",
        action_flag=CHANGE,
    )
    group = Group.objects.create(name="Editors")
    chat_document = _chat(*FIRST_TURN)
    chat = conversation_ingest(
        source=source, document=chat_document, api_key=ApiKey.objects.get(source=source)
    ).conversation
    assert chat is not None
    return World(
        reviewer=reviewer,
        admin=admin_user,
        other_user=other_user,
        source=source,
        raw_key=ingest_key,
        conversation=conversation,
        feedback=feedback,
        label=helpful,
        spare_label=spare_label,
        spare_source=spare_source,
        group=group,
        chat=chat,
        chat_document=chat_document,
        tmp=tmp_path,
    )


# --------------------------------------------------------------------------------------------------------------
# Expected events


def expect(
    action: str,
    actor: User | str,
    target_type: str,
    target_id: Any,
    *,
    before: Any = None,
    after: Any = None,
    conversation: Any = None,
) -> dict[str, Any]:
    """An event as stored; `actor` is a user, or the name of a source ("source:x") or a command."""
    return {
        "action": action,
        "actor_id": actor.pk if isinstance(actor, User) else None,
        "actor_username": actor.get_username() if isinstance(actor, User) else actor,
        "target_type": target_type,
        "target_id": str(target_id),
        "conversation_uuid": conversation,
        "before": before,
        "after": after,
    }


def stored(events: Any) -> list[dict[str, Any]]:
    return list(
        events.values(
            "action", "actor_id", "actor_username", "target_type", "target_id", "conversation_uuid", "before", "after"
        )
    )


def _order(event: dict[str, Any]) -> tuple[str, str]:
    return event["action"], event["target_id"]


def command(name: str) -> str:
    return CommandActor(name).get_username()


def ingest_state(conversation: Conversation, **extra: Any) -> dict[str, Any]:
    conversation.refresh_from_db()
    state = {
        "message_count": conversation.message_count,
        "branch_count": conversation.branch_count,
        "active_leaf_key": conversation.active_leaf_key,
        "feedback_count": conversation.feedback_count,
        "score_up": conversation.score_up,
        "score_down": conversation.score_down,
    }
    return state | extra


def user_row(user: User, **changes: Any) -> dict[str, Any]:
    """A user's audited row (the password only as set or not), as created or deleted."""
    return {
        "id": user.pk,
        "password": "(set)",
        "last_login": None,
        "is_superuser": False,
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_staff": False,
        "is_active": True,
        "date_joined": ANY,
        "groups": [],
        "user_permissions": [],
    } | changes


# --------------------------------------------------------------------------------------------------------------
# The write paths


@dataclass(frozen=True)
class WritePath:
    name: str
    covers: tuple[str, ...]  # "<METHOD> <url name>", "admin <model> <add|change|delete>", "service <fn>", ...
    perform: Callable[[World], list[dict[str, Any]]]  # does the write, returns the events it must write
    xfail: str = ""  # a known gap, and why: the test must fail until it is closed (strict)


WRITE_PATHS: list[WritePath] = []


def write_path(*covers: str, xfail: str = "") -> Callable[[Callable[[World], list[dict[str, Any]]]], Any]:
    def register(perform: Callable[[World], list[dict[str, Any]]]) -> Any:
        WRITE_PATHS.append(WritePath(perform.__name__, covers, perform, xfail))
        return perform

    return register


# --- The review pages


@write_path("POST chats:feedback_save", "service feedback_submit")
def review_page_gives_feedback(w: World) -> list[dict[str, Any]]:
    answer = last_assistant(w.conversation)
    response = w.page(w.reviewer).post(
        f"/conversations/{w.conversation.uuid}/feedback/",
        {"message": answer.pk, "score": "-1", "labels": ["helpful"], "comment": "Wrong", "correction": "Right."},
    )
    assert response.status_code == 302
    feedback = Feedback.objects.get(author=w.reviewer, message=answer)
    after = {"score": -1, "comment": "Wrong", "correction": "Right.", "labels": ["helpful"], "message": answer.key}
    return [
        expect("feedback.created", w.reviewer, "feedback", feedback.uuid, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST chats:feedback_save", "service feedback_update")
def review_page_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.page(w.reviewer).post(
        f"/conversations/{w.conversation.uuid}/feedback/",
        {"feedback": w.feedback.uuid, "score": "0", "comment": "On second thoughts"},
    )
    assert response.status_code == 302
    after = before | {"score": 0, "comment": "On second thoughts", "labels": []}
    return [
        expect(
            "feedback.updated",
            w.reviewer,
            "feedback",
            w.feedback.uuid,
            before=before,
            after=after,
            conversation=w.conversation.uuid,
        )
    ]


@write_path("POST chats:feedback_delete", "service feedback_delete")
def review_page_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/feedback/{w.feedback.uuid}/delete/")
    assert response.status_code == 302
    return [
        expect(
            "feedback.deleted", w.reviewer, "feedback", w.feedback.uuid, before=before, conversation=w.conversation.uuid
        )
    ]


@write_path("POST chats:review_status", "service conversation_set_review_status")
def review_page_sets_the_review_status(w: World) -> list[dict[str, Any]]:
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/status/", {"status": "reviewed"})
    assert response.status_code == 302
    return [
        expect(
            "conversation.status_changed",
            w.reviewer,
            "conversation",
            w.conversation.uuid,
            before={"review_status": "unreviewed"},
            after={"review_status": "reviewed"},
            conversation=w.conversation.uuid,
        )
    ]


@write_path(
    "POST chats:active_branch",
    "service message_set_active_branch",
)
def review_page_switches_the_active_branch(w: World) -> list[dict[str, Any]]:
    was = w.conversation.active_leaf_key
    other = Message.objects.get(conversation=w.conversation, on_active_path=False)
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/branch/", {"message": other.pk})
    assert response.status_code == 302
    assert was != other.key
    return [
        expect(
            "conversation.branch_switched",
            w.reviewer,
            "conversation",
            w.conversation.uuid,
            before={"active_leaf_key": was},
            after={"active_leaf_key": other.key, "message": other.key},
            conversation=w.conversation.uuid,
        )
    ]


# --- Ingestion by a source's key: one event per conversation created or changed, none for a no-op


def _ingested(w: World, action: str, response: Any, before: Any, **after: Any) -> dict[str, Any]:
    body = response.json()
    conversation = Conversation.objects.get(uuid=body["conversation"])
    extra = {"receipt": body["receipt"], "api_key": w.key_prefix, **after}
    return expect(
        action,
        f"source:{w.source.name}",
        "conversation",
        conversation.uuid,
        before=before,
        after=ingest_state(conversation, **extra),
        conversation=conversation.uuid,
    )


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_creates_a_conversation(w: World) -> list[dict[str, Any]]:
    response = w.ingest(_chat(*FIRST_TURN, chat_id="new-one"))
    assert response.status_code == 201
    return [
        _ingested(
            w, "conversation.created", response, None, external_id="new-one", format="chat_document", messages_added=2
        )
    ]


@write_path(
    "POST api:ingest", "service conversation_ingest", "service conversation_store", "service plan_apply_changes"
)
def api_ingest_appends_to_a_conversation(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat)
    response = w.ingest(_chat(*FIRST_TURN, ("user", "And now?"), ("assistant", "Raise the annealing temperature.")))
    assert response.status_code == 200
    return [_ingested(w, "conversation.appended", response, before, messages_added=2)]


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_branches_a_conversation(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat)
    response = w.ingest(_chat(FIRST_TURN[0], ("assistant", "Contamination.")))
    assert response.status_code == 200
    assert ingest_state(w.chat)["branch_count"] == 1
    return [_ingested(w, "conversation.branched", response, before, messages_added=1)]


@write_path("POST api:ingest", "service conversation_ingest", "service conversation_store")
def api_ingest_changes_a_conversations_title(w: World) -> list[dict[str, Any]]:
    before = ingest_state(w.chat, title="Primers")
    response = w.ingest(_chat(*FIRST_TURN, title="Primer dimers"))
    assert response.status_code == 200
    return [_ingested(w, "conversation.updated", response, before, title="Primer dimers", messages_added=0)]


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
    created = _ingested(
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
    return [created, _ingested(w, "conversation.updated", second, before, **after)]


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


def _bulk_ingest(w: World, query: str) -> list[dict[str, Any]]:
    """One event per conversation a bulk request created or changed, none for one it left unchanged; the same
    whether the request stores the documents (sync) or a worker does after it (async)."""
    before = ingest_state(w.chat)
    documents = [
        _chat(*FIRST_TURN, chat_id="bulk-1"),
        _chat(*FIRST_TURN, ("user", "Sure?"), ("assistant", "Yes."), chat_id="bulk-2"),
        _chat(*FIRST_TURN, ("user", "And now?"), ("assistant", "Raise it.")),  # appends to w.chat
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


@write_path("command requeue_ingest", "service queued_receipts_requeue", "service queued_receipts_ingest")
def command_requeue_ingest_applies_what_is_still_queued(w: World) -> list[dict[str, Any]]:
    # A request whose task was never delivered (the callback that would send it is dropped: no commit).
    with TestCase.captureOnCommitCallbacks(execute=False):
        response = w.api().post(
            "/api/v1/ingest/bulk/?async=true",
            data=json.dumps([_chat(*FIRST_TURN, chat_id="lost")]),
            content_type="application/json",
        )
    receipt = IngestionReceipt.objects.get(uuid=response.json()["results"][0]["receipt"])
    IngestionReceipt.objects.filter(pk=receipt.pk).update(created_at=timezone.now() - timedelta(hours=1))
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_command("requeue_ingest", "--minutes", "30", stdout=io.StringIO())
    receipt.refresh_from_db()
    assert receipt.outcome == "created" and receipt.conversation is not None
    after = ingest_state(
        receipt.conversation,
        external_id="lost",
        format="chat_document",
        messages_added=2,
        receipt=str(receipt.uuid),
        api_key=w.key_prefix,
    )
    conversation = receipt.conversation.uuid
    return [
        expect(
            "conversation.created", f"source:{w.source.name}", "conversation", conversation, after=after,
            conversation=conversation,
        )
    ]  # fmt: skip


# --- The feedback API


@write_path("POST api:feedback-list", "service feedback_submit")
def api_gives_feedback(w: World) -> list[dict[str, Any]]:
    answer = last_assistant(w.conversation)
    body = {"conversation": str(w.conversation.uuid), "message": answer.key, "score": 1, "labels": ["helpful"]}
    response = w.api(w.reviewer).post("/api/v1/feedback/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    after = {"score": 1, "comment": "", "correction": "", "labels": ["helpful"], "message": answer.key}
    return [
        expect(
            "feedback.created",
            w.reviewer,
            "feedback",
            response.json()["uuid"],
            after=after,
            conversation=w.conversation.uuid,
        )
    ]


@write_path("PATCH api:feedback-detail", "service feedback_update")
def api_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.api(w.reviewer).patch(
        f"/api/v1/feedback/{w.feedback.uuid}/", data=json.dumps({"score": -1}), content_type="application/json"
    )
    assert response.status_code == 200
    return [
        expect(
            "feedback.updated",
            w.reviewer,
            "feedback",
            w.feedback.uuid,
            before=before,
            after=before | {"score": -1},
            conversation=w.conversation.uuid,
        )
    ]


@write_path("DELETE api:feedback-detail", "service feedback_delete")
def api_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.api(w.reviewer).delete(f"/api/v1/feedback/{w.feedback.uuid}/")
    assert response.status_code == 204
    return [
        expect(
            "feedback.deleted", w.reviewer, "feedback", w.feedback.uuid, before=before, conversation=w.conversation.uuid
        )
    ]


# --- Exports: reading data out is recorded too


@write_path("GET api:conversation-export", "service export_record")
def api_exports_a_conversation(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get(f"/api/v1/conversations/{w.conversation.uuid}/export/?format=openai")
    assert response.status_code == 200
    after = {"format": "openai", "filters": {}, "count": 1}
    uuid_ = w.conversation.uuid
    return [expect("conversation.exported", w.reviewer, "conversation", uuid_, after=after, conversation=uuid_)]


@write_path("GET api:conversation-export", "service export_record")
def api_exports_a_conversation_with_a_source_key(w: World) -> list[dict[str, Any]]:
    response = w.api().get(f"/api/v1/conversations/{w.chat.uuid}/export/?format=chat_document")
    assert response.status_code == 200
    after = {"format": "chat_document", "filters": {}, "count": 1}
    actor = f"source:{w.source.name}"
    return [expect("conversation.exported", actor, "conversation", w.chat.uuid, after=after, conversation=w.chat.uuid)]


@write_path("GET api:artifacts-export", "service export_record")
def api_exports_the_artifact_list(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get("/api/v1/export/artifacts/?kind=protocol")
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).splitlines()  # type: ignore[attr-defined]
    after = {"format": "ndjson", "filters": {"kind": "protocol"}, "count": len(lines)}
    return [expect("conversation.exported", w.reviewer, "artifacts", "filtered", after=after)]


@write_path("GET api:export", "service export_record")
def api_exports_a_filtered_set(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get("/api/v1/export/?format=training&status=unreviewed")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "training", "filters": {"status": "unreviewed"}, "count": 2}
    return [expect("conversation.exported", w.reviewer, "conversations", "filtered", after=after)]


# --- Export jobs: asking for one is a write; downloading its result is an export, recorded as the others are


def _job_after(format: str, filters: dict[str, Any] | None = None, envelope: bool = False) -> dict[str, Any]:
    return {"format": format, "envelope": envelope, "filters": filters or {}}


@write_path("POST api:export-jobs", "service export_job_create")
def api_asks_for_an_export_job(w: World) -> list[dict[str, Any]]:
    body = {"format": "training", "filters": {"status": "unreviewed", "source": [w.source.name]}}
    response = w.api(w.reviewer).post("/api/v1/export/jobs/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202 and response.json()["state"] == "done"
    after = _job_after("training", {"status": "unreviewed", "source": w.source.name})
    return [expect("export_job.created", w.reviewer, "export_job", response.json()["id"], after=after)]


@write_path("POST api:export-jobs", "service export_job_create")
def api_asks_for_an_export_job_with_a_source_key(w: World) -> list[dict[str, Any]]:
    body = {"format": "openai", "envelope": True}
    response = w.api().post("/api/v1/export/jobs/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202
    after = _job_after("openai", envelope=True)
    return [expect("export_job.created", f"source:{w.source.name}", "export_job", response.json()["id"], after=after)]


@write_path("POST chats:export_job_create", "service export_job_create")
def list_page_runs_an_export_as_a_job(w: World) -> list[dict[str, Any]]:
    response = w.page(w.reviewer).post("/exports/new/", {"format": "openai", "input_format": "chat_document"})
    assert response.status_code == 302
    job = ExportJob.objects.get()
    after = _job_after("openai", {"input_format": "chat_document"})
    return [expect("export_job.created", w.reviewer, "export_job", job.uuid, after=after)]


@write_path("GET api:export-job-download", "service export_job_download_record", "service export_record")
def api_downloads_an_export_job(w: World) -> list[dict[str, Any]]:
    with audit_scope():  # asking for the job is not this path's event
        job = ExportJob.objects.create(requested_by=w.reviewer, format="openai", filters={"status": ["unreviewed"]})
    export_job_execute(job.pk)
    response = w.api(w.reviewer).get(f"/api/v1/export/jobs/{job.uuid}/download/")
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content).splitlines()) == 2  # type: ignore[attr-defined]
    after = {"format": "openai", "filters": {"job": str(job.uuid), "status": "unreviewed"}, "count": 2}
    return [expect("conversation.exported", w.reviewer, "conversations", "filtered", after=after)]


@write_path("GET chats:audit_export", "service audit_log_export_record")
def audit_page_exports_the_log(w: World) -> list[dict[str, Any]]:
    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]
    response = w.page(w.admin).get(f"/audit/export/?format=csv&conversation={w.conversation.uuid}")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "csv", "filters": {"conversation": str(w.conversation.uuid)}, "up_to_id": last}
    return [expect("audit.exported", w.admin, "audit_log", "filtered", after=after)]


# --- Team review: queues, items, leases, reviews and resolutions (services; the lead is the admin)

REVIEW_QUESTIONS: list[dict[str, Any]] = [
    {"key": "correct", "prompt": "Correct?", "type": "categorical", "options": ["yes", "no"], "target": "conversation"}
]


def _review_queue(w: World, reviews_per_item: int = 1) -> Queue:
    """A queue of the world's conversation, worked by the reviewer; its own events are not the path's."""
    with audit_scope():
        queue = Queue.objects.create(name="Answers", reviews_per_item=reviews_per_item, created_by=w.admin)
        RubricVersion.objects.create(queue=queue, version=1, questions=REVIEW_QUESTIONS)
        queue.members.add(w.reviewer)
        QueueItem.objects.create(queue=queue, conversation=w.conversation)
    return queue


def _lease_row(w: World, queue: Queue, action: str, actor: User) -> dict[str, Any]:
    item = QueueItem.objects.get(queue=queue)
    after = {"reviewer": w.reviewer.username, "expires_at": ANY}
    return expect(action, actor, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)


@write_path("service queue_create")
def lead_creates_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_services.queue_create(
        actor=w.admin, name="Answers", questions=REVIEW_QUESTIONS, reviews_per_item=2, members=[w.reviewer]
    )
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 2,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", queue.pk, after=after)]


@write_path("service queue_update")
def lead_changes_a_queue(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    assert review_services.queue_update(actor=w.admin, queue=queue, reviews_per_item=3, members=[])
    before = {"reviews_per_item": 1, "members": [w.reviewer.username]}
    after = {"reviews_per_item": 3, "members": []}
    return [expect("queue.updated", w.admin, "queue", queue.pk, before=before, after=after)]


@write_path("service queue_add_conversations")
def lead_adds_conversations_to_a_queue(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    added = review_services.queue_add_conversations(
        actor=w.admin, queue=queue, conversations=Conversation.objects.all()
    )
    assert added == 1  # the world's chat; its conversation was in the queue already
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


@write_path("service item_lease_next")
def reviewer_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    assert review_services.item_lease_next(queue=queue, reviewer=w.reviewer) is not None
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("service item_assign")
def lead_assigns_an_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    review_services.item_assign(actor=w.admin, item=QueueItem.objects.get(queue=queue), reviewer=w.reviewer)
    return [_lease_row(w, queue, "queue_item.assigned", w.admin)]


@write_path("service item_release")
def lead_releases_an_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    with audit_scope():
        Lease.objects.create(
            conversation_id=item.conversation_id,
            item=item,
            reviewer=w.reviewer,
            expires_at=timezone.now() + timedelta(minutes=5),
        )
    assert review_services.item_release(actor=w.admin, item=item) == 1
    before = {"reviewers": [w.reviewer.username]}
    return [
        expect("queue_item.released", w.admin, "queue_item", item.pk, before=before, conversation=w.conversation.uuid)
    ]


@write_path("service review_save_draft")
def reviewer_saves_a_draft_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    review = review_services.review_save_draft(reviewer=w.reviewer, item=item, answers={"correct": "no"})
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "no"}}
    return [
        expect("review.draft_saved", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("service review_submit")
def reviewer_submits_a_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    review = review_services.review_submit(reviewer=w.reviewer, item=item, answers={"correct": "yes"})
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    return [expect("review.submitted", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)]


@write_path("service item_resolve")
def lead_resolves_an_item(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    review_services.item_resolve(actor=w.admin, item=item, answers={"correct": "no"}, correction="Use 58 °C.")
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Use 58 °C."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST api:queue-list", "service queue_create")
def api_creates_a_queue(w: World) -> list[dict[str, Any]]:
    body = {"name": "Answers", "questions": REVIEW_QUESTIONS, "members": [w.reviewer.username]}
    response = w.api(w.admin).post("/api/v1/queues/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 1,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", response.json()["id"], after=after)]


@write_path("POST api:queue-items", "service queue_add_conversations")
def api_adds_conversations_to_a_queue_by_filters(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    body = {"filters": {"source": w.source.name}}
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/items/", data=json.dumps(body), content_type="application/json"
    )
    assert response.json() == {"added": 1}
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


# --- Queue rules (the lead is the admin)


# --- Team review's pages: the same services, through the forms a person posts

_RUBRIC_POST = {
    "rubric-TOTAL_FORMS": "1",
    "rubric-INITIAL_FORMS": "0",
    "rubric-0-key": "correct",
    "rubric-0-prompt": "Correct?",
    "rubric-0-type": "categorical",
    "rubric-0-options": "yes, no",
    "rubric-0-target": "conversation",
}


def _posted(client: Client, url: str, data: dict[str, Any]) -> None:
    response = client.post(url, data)
    assert response.status_code in (200, 302), response.content[:500]


@write_path("POST chats:queue_create", "service queue_create")
def page_creates_a_queue(w: World) -> list[dict[str, Any]]:
    body = {"name": "Answers", "instructions": "", "reviews_per_item": "2", "members": [w.reviewer.username]}
    _posted(w.page(w.admin), reverse("chats:queue_create"), {**body, **_RUBRIC_POST})
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 2,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", Queue.objects.get(name="Answers").pk, after=after)]


@write_path("POST chats:queue_update", "service queue_update")
def page_changes_a_queue(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    body = {"name": "Answers", "instructions": "", "reviews_per_item": "3"}
    _posted(w.page(w.admin), reverse("chats:queue_update", args=[queue.pk]), {**body, **_RUBRIC_POST})
    before = {"reviews_per_item": 1, "members": [w.reviewer.username]}
    after = {"reviews_per_item": 3, "members": []}
    return [expect("queue.updated", w.admin, "queue", queue.pk, before=before, after=after)]


@write_path("POST chats:queue_add", "service queue_add_conversations")
def page_adds_the_filters_conversations_to_a_queue(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    _posted(w.page(w.admin), reverse("chats:queue_add"), {"queue": str(queue.pk), "scope": "filters"})
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


@write_path("POST chats:queue_next", "service item_lease_next")
def page_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    _posted(w.page(w.reviewer), reverse("chats:queue_next", args=[queue.pk]), {})
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("POST chats:queue_assign", "service item_assign", "service item_release")
def page_assigns_then_releases_an_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    url, page = reverse("chats:queue_assign", args=[queue.pk]), w.page(w.admin)
    _posted(page, url, {"item": str(item.pk), "reviewer": w.reviewer.username, "action": "assign"})
    assigned = _lease_row(w, queue, "queue_item.assigned", w.admin)
    _posted(page, url, {"item": str(item.pk), "action": "release"})
    before = {"reviewers": [w.reviewer.username]}
    released = expect(
        "queue_item.released", w.admin, "queue_item", item.pk, before=before, conversation=w.conversation.uuid
    )
    return [assigned, released]


@write_path("POST chats:review_draft", "service review_save_draft")
def page_saves_a_draft_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    _posted(w.page(w.reviewer), reverse("chats:review_draft", args=[item.queue_id, item.pk]), {"q.correct": "no"})
    review = Review.objects.get(item=item, reviewer=w.reviewer)
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "no"}}
    return [
        expect("review.draft_saved", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST chats:review_submit", "service review_submit")
def page_submits_a_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    _posted(w.page(w.reviewer), reverse("chats:review_submit", args=[item.queue_id, item.pk]), {"q.correct": "yes"})
    review = Review.objects.get(item=item, reviewer=w.reviewer)
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    return [expect("review.submitted", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)]


@write_path("POST chats:item_resolve", "service item_resolve")
def page_resolves_an_item(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=_review_queue(w))
    body = {"q.correct": "no", "correction": "Use 58 °C."}
    _posted(w.page(w.admin), reverse("chats:item_resolve", args=[item.queue_id, item.pk]), body)
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Use 58 °C."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


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
    queue = _review_queue(w)
    body = {"name": "Tools", "filters": {"has_tool_calls": "true"}, "sample_rate": 0.5}
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/rules/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201
    after = _rule_state(queue, name="Tools", filters={"has_tool_calls": "true"}, sample_rate="0.5000")
    return [expect("queue_rule.created", w.admin, "queue_rule", response.json()["id"], after=after)]


@write_path("PATCH api:queue-rule", "service rule_update")
def api_changes_a_queue_rule(w: World) -> list[dict[str, Any]]:
    rule = _review_rule(w, _review_queue(w))
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
    queue = _review_queue(w)
    rule = _review_rule(w, queue)
    assert w.api(w.admin).delete(f"/api/v1/queues/{queue.pk}/rules/{rule.pk}/").status_code == 204
    return [expect("queue_rule.deleted", w.admin, "queue_rule", rule.pk, before=_rule_state(queue))]


@write_path(
    "POST api:queue-rule-run", "service rule_run_request", "service rule_run", "service queue_add_conversation_ids"
)
def api_runs_a_queue_rule(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
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
    queue = _review_queue(w)
    rule = _review_rule(w, queue)
    response = w.ingest(_chat(*FIRST_TURN, chat_id="ruled"))
    assert response.status_code == 201
    return [
        _ingested(
            w, "conversation.created", response, None, external_id="ruled", format="chat_document", messages_added=2
        ),
        expect("queue.items_added", f"source:{w.source.name}", "queue", queue.pk, after={"added": 1, "rule": rule.pk}),
    ]


POSTGRES_ONLY_PATHS = {"api_bulk_ingest_adds_what_a_queue_rule_takes_at_once"}


@write_path(
    "POST api:ingest-bulk",
    "service conversations_ingest_bulk",
    "service rules_apply",
    "service queue_add_conversation_ids",
)
def api_bulk_ingest_adds_what_a_queue_rule_takes_at_once(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    rule = _review_rule(w, queue)
    documents = [_chat(*FIRST_TURN, chat_id="ruled-1"), _chat(*FIRST_TURN, chat_id="ruled-2")]
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


@write_path("POST api:queue-next", "service item_lease_next")
def api_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    assert w.api(w.reviewer).post(f"/api/v1/queues/{queue.pk}/next/").status_code == 200
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("POST api:queue-item-reviews", "service review_submit")
def api_submits_a_review(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    response = w.api(w.reviewer).post(
        f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/",
        data=json.dumps({"answers": {"correct": "yes"}}),
        content_type="application/json",
    )
    assert response.status_code == 201
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    review_id = response.json()["id"]
    return [expect("review.submitted", w.reviewer, "review", review_id, after=after, conversation=w.conversation.uuid)]


@write_path("POST api:queue-item-resolution", "service item_resolve")
def api_resolves_an_item(w: World) -> list[dict[str, Any]]:
    queue = _review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/items/{item.pk}/resolution/",
        data=json.dumps({"answers": {"correct": "no"}, "correction": "Right."}),
        content_type="application/json",
    )
    assert response.status_code == 200
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Right."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


# --- Datasets: a lead's snapshot of the resolved items, and its export


def _resolved_queue(w: World) -> Queue:
    """The review queue with its item resolved by the admin; its own events are not the path's."""
    queue = _review_queue(w)
    with audit_scope():
        item = QueueItem.objects.get(queue=queue)
        rubric = RubricVersion.objects.get(queue=queue)
        Resolution.objects.create(
            conversation_id=item.conversation_id,
            item=item,
            lead=w.admin,
            rubric_version=rubric,
            answers={"correct": "no"},
        )
    return queue


def _snapshot_after(name: str) -> dict[str, Any]:
    return {"name": name, "description": "", "queues": ["Answers"], "items": 1}


@write_path("service dataset_snapshot_create")
def lead_takes_a_dataset_snapshot(w: World) -> list[dict[str, Any]]:
    queue = _resolved_queue(w)
    dataset = dataset_services.dataset_snapshot_create(actor=w.admin, name="v1", queues=[queue])
    return [expect("dataset.created", w.admin, "dataset", dataset.pk, after=_snapshot_after("v1"))]


@write_path("POST api:dataset-list", "service dataset_snapshot_create")
def api_takes_a_dataset_snapshot(w: World) -> list[dict[str, Any]]:
    queue = _resolved_queue(w)
    body = {"name": "v1", "queues": [queue.pk]}
    response = w.api(w.admin).post("/api/v1/datasets/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    return [expect("dataset.created", w.admin, "dataset", response.json()["id"], after=_snapshot_after("v1"))]


@write_path("GET api:dataset-export", "service export_record")
def api_exports_a_dataset(w: World) -> list[dict[str, Any]]:
    with audit_scope():
        dataset = Dataset.objects.create(name="v1", created_by=w.admin)
    response = w.api(w.admin).get(f"/api/v1/datasets/{dataset.pk}/export/?format=gold")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "gold", "filters": {"dataset": dataset.pk, "name": "v1"}, "count": 0}
    return [expect("conversation.exported", w.admin, "dataset", "filtered", after=after)]


# --- The admin: keys, sources, labels, feedback


def _admin_post(w: World, url: str, data: dict[str, Any]) -> Any:
    response = w.page(w.admin).post(url, data)
    assert response.status_code in (200, 302), response.content[:2000]
    if response.status_code == 200 and "adminform" in (response.context or {}):
        errors = response.context["adminform"].form.errors
        assert not errors, errors
    return response


def _bulk_action(w: World, model: str, action: str, pks: list[Any]) -> Any:
    return _admin_post(w, f"/admin/{model}/", {"action": action, "_selected_action": pks, "post": "yes"})


@write_path("admin:chats_source_create_key", "service api_key_create")
def admin_creates_a_key(w: World) -> list[dict[str, Any]]:
    _admin_post(w, f"/admin/chats/source/{w.source.pk}/create-key/", {"name": "ci runner"})
    key = ApiKey.objects.get(name="ci runner")
    after = {"owner": f"source:{w.source.name}", "prefix": key.prefix, "name": "ci runner", "expires_at": None}
    return [expect("api_key.created", w.admin, "api_key", key.pk, after=after)]


@write_path("admin chats.apikey action revoke_keys", "service api_key_revoke")
def admin_revokes_keys(w: World) -> list[dict[str, Any]]:
    key = ApiKey.objects.get(source=w.source)
    _bulk_action(w, "chats/apikey", "revoke_keys", [key.pk])
    return [expect("api_key.revoked", w.admin, "api_key", key.pk, before={"revoked": False}, after={"revoked": True})]


@write_path("admin chats.source add", "service source_get_or_create")
def admin_adds_a_source(w: World) -> list[dict[str, Any]]:
    _admin_post(w, "/admin/chats/source/add/", {"name": "batch-job", "description": "Nightly", "is_active": "on"})
    source = Source.objects.get(name="batch-job")
    after = {"name": "batch-job", "description": "Nightly", "is_active": True}
    return [expect("source.created", w.admin, "source", source.pk, after=after)]


@write_path("admin chats.source change", "service source_update")
def admin_changes_a_source(w: World) -> list[dict[str, Any]]:
    _admin_post(w, f"/admin/chats/source/{w.source.pk}/change/", {"description": "Paused", "name": "renamed"})
    w.source.refresh_from_db()
    assert (w.source.name, w.source.is_active) == ("masterbrain", False)  # the name is set once
    before, after = {"description": "", "is_active": True}, {"description": "Paused", "is_active": False}
    return [expect("source.updated", w.admin, "source", w.source.pk, before=before, after=after)]


def _spare_source_row(w: World) -> dict[str, Any]:
    return {"id": w.spare_source.pk, "name": "spare-source", "description": "", "is_active": True, "created_at": ANY}


@write_path("admin chats.source delete")
def admin_deletes_a_source(w: World) -> list[dict[str, Any]]:
    before = _spare_source_row(w)
    _admin_post(w, f"/admin/chats/source/{w.spare_source.pk}/delete/", {"post": "yes"})
    assert not Source.objects.filter(pk=w.spare_source.pk).exists()
    return [expect("source.deleted", w.admin, "source", w.spare_source.pk, before=before)]


@write_path("admin chats.source action delete_selected")
def admin_deletes_selected_sources(w: World) -> list[dict[str, Any]]:
    before = _spare_source_row(w)
    _bulk_action(w, "chats/source", "delete_selected", [w.spare_source.pk])
    assert not Source.objects.filter(pk=w.spare_source.pk).exists()
    return [expect("source.deleted", w.admin, "source", w.spare_source.pk, before=before)]


@write_path("admin chats.label add", "service label_create")
def admin_adds_a_label(w: World) -> list[dict[str, Any]]:
    _admin_post(w, "/admin/chats/label/add/", {"name": "hallucination", "description": "Made up."})
    label = Label.objects.get(name="hallucination")
    after = {"name": "hallucination", "description": "Made up."}
    return [expect("label.created", w.admin, "label", label.pk, after=after)]


@write_path("admin chats.label change", "service label_update")
def admin_renames_a_label(w: World) -> list[dict[str, Any]]:
    _admin_post(w, f"/admin/chats/label/{w.label.pk}/change/", {"name": "solved", "description": "Solved it."})
    before = {"name": "helpful", "description": "Solved it."}
    after = {"name": "solved", "description": "Solved it."}
    return [expect("label.updated", w.admin, "label", w.label.pk, before=before, after=after)]


@write_path("admin chats.label delete", "service label_delete")
def admin_deletes_a_label(w: World) -> list[dict[str, Any]]:
    _admin_post(w, f"/admin/chats/label/{w.spare_label.pk}/delete/", {"post": "yes"})
    before = {"name": "spare", "description": "Unused."}
    return [expect("label.deleted", w.admin, "label", w.spare_label.pk, before=before)]


@write_path("admin chats.label action delete_selected", "service label_delete")
def admin_deletes_selected_labels(w: World) -> list[dict[str, Any]]:
    _bulk_action(w, "chats/label", "delete_selected", [w.spare_label.pk])
    before = {"name": "spare", "description": "Unused."}
    return [expect("label.deleted", w.admin, "label", w.spare_label.pk, before=before)]


@write_path("admin chats.feedback change", "service feedback_update")
def admin_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    _admin_post(
        w, f"/admin/chats/feedback/{w.feedback.pk}/change/", {"score": "-1", "comment": "No.", "correction": ""}
    )
    after = before | {"score": -1, "comment": "No."}
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.updated", w.admin, "feedback", f.uuid, before=before, after=after, conversation=uuid_)]


@write_path("admin chats.feedback delete", "service feedback_delete")
def admin_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    _admin_post(w, f"/admin/chats/feedback/{w.feedback.pk}/delete/", {"post": "yes"})
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.deleted", w.admin, "feedback", f.uuid, before=before, conversation=uuid_)]


@write_path("admin chats.feedback action delete_selected", "service feedback_delete")
def admin_deletes_selected_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    _bulk_action(w, "chats/feedback", "delete_selected", [w.feedback.pk])
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.deleted", w.admin, "feedback", f.uuid, before=before, conversation=uuid_)]


# --- The admin: sign-in lockouts


@write_path("admin axes.accessattempt action unlock", "service signin_unlock")
def admin_unlocks_a_user_name_from_an_address(w: World) -> list[dict[str, Any]]:
    # Failed sign-ins are django-axes' records (not audited, like sessions); lifting them is audited.
    for spelling in (w.reviewer.username, w.reviewer.username.upper()):
        response = Client().post(
            "/accounts/login/", {"username": spelling, "password": "wrong"}, REMOTE_ADDR="192.0.2.1"
        )
        assert response.status_code == 200
    attempts = AccessAttempt.objects.filter(username=w.reviewer.username)
    _bulk_action(w, "axes/accessattempt", "unlock", list(attempts.values_list("pk", flat=True)))
    assert not attempts.exists()
    before, after = {"ip_address": "192.0.2.1", "failures": 2}, {"ip_address": "192.0.2.1", "failures": 0}
    return [expect("signin.unlocked", w.admin, "signin", w.reviewer.username, before=before, after=after)]


# --- The admin: users and roles


@write_path("admin auth.user add")
def admin_adds_a_user(w: World) -> list[dict[str, Any]]:
    _admin_post(
        w,
        "/admin/auth/user/add/",
        {"username": "newbie", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    user = User.objects.get(username="newbie")
    return [expect("user.created", w.admin, "user", user.pk, after=user_row(user))]


def _user_form(user: User, **changes: Any) -> dict[str, Any]:
    joined = user.date_joined
    return {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "date_joined_0": f"{joined:%Y-%m-%d}",
        "date_joined_1": f"{joined:%H:%M:%S}",
        "last_login_0": "",
        "last_login_1": "",
    } | changes


@write_path("admin auth.user change")
def admin_changes_a_users_roles_and_flags(w: World) -> list[dict[str, Any]]:
    reviewers = Group.objects.get(name="Reviewers")
    form = _user_form(w.other_user, is_active="", is_staff="on", is_superuser="on", groups=[reviewers.pk])
    _admin_post(w, f"/admin/auth/user/{w.other_user.pk}/change/", form)
    before = {"is_active": True, "is_staff": False, "is_superuser": False, "groups": []}
    after = {"is_active": False, "is_staff": True, "is_superuser": True, "groups": ["Reviewers"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin auth.user change")
def admin_gives_a_user_a_permission(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permission = Permission.objects.get(codename="view_conversation")
    form = _user_form(w.other_user, user_permissions=[permission.pk])
    _admin_post(w, f"/admin/auth/user/{w.other_user.pk}/change/", form)
    before: dict[str, list[str]] = {"user_permissions": []}
    after = {"user_permissions": ["chats.view_conversation"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin:auth_user_password_change")
def admin_sets_a_users_password(w: World) -> list[dict[str, Any]]:
    url = f"/admin/auth/user/{w.other_user.pk}/password/"
    _admin_post(w, url, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"})
    w.other_user.refresh_from_db()
    assert w.other_user.check_password(NEW_PASSWORD)
    before, after = {"password": "(set)"}, {"password": "(changed)"}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin:password_change")
def admin_changes_their_own_password(w: World) -> list[dict[str, Any]]:
    data = {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    response = w.page(w.admin).post("/admin/password_change/", data)
    assert response.status_code == 302, response.content[:2000]
    before, after = {"password": "(set)"}, {"password": "(changed)"}
    return [expect("user.updated", w.admin, "user", w.admin.pk, before=before, after=after)]


def _log_entry_of(user: User) -> int:
    return LogEntry.objects.get(user=user).pk


@write_path("admin auth.user delete")
def admin_deletes_a_user(w: World) -> list[dict[str, Any]]:
    before = user_row(w.other_user, also_deleted={"admin.logentry": [_log_entry_of(w.other_user)]})
    _admin_post(w, f"/admin/auth/user/{w.other_user.pk}/delete/", {"post": "yes"})
    assert not User.objects.filter(pk=w.other_user.pk).exists()
    return [expect("user.deleted", w.admin, "user", w.other_user.pk, before=before)]


@write_path("admin auth.user action delete_selected")
def admin_deletes_selected_users(w: World) -> list[dict[str, Any]]:
    before = user_row(w.other_user, also_deleted={"admin.logentry": [_log_entry_of(w.other_user)]})
    _bulk_action(w, "auth/user", "delete_selected", [w.other_user.pk])
    assert not User.objects.filter(pk=w.other_user.pk).exists()
    return [expect("user.deleted", w.admin, "user", w.other_user.pk, before=before)]


@write_path("admin auth.group add")
def admin_adds_a_group(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permission = Permission.objects.get(codename="view_conversation")
    _admin_post(w, "/admin/auth/group/add/", {"name": "Readers", "permissions": [permission.pk]})
    group = Group.objects.get(name="Readers")
    after = {"id": group.pk, "name": "Readers", "permissions": ["chats.view_conversation"]}
    return [expect("group.created", w.admin, "group", group.pk, after=after)]


@write_path("admin auth.group change")
def admin_changes_a_groups_permissions(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permissions = Permission.objects.filter(codename__in=["view_conversation", "export_conversation"])
    data = {"name": "Editors", "permissions": [p.pk for p in permissions]}
    _admin_post(w, f"/admin/auth/group/{w.group.pk}/change/", data)
    after = {"permissions": ["chats.export_conversation", "chats.view_conversation"]}
    return [expect("group.updated", w.admin, "group", w.group.pk, before={"permissions": []}, after=after)]


@write_path("admin auth.group delete")
def admin_deletes_a_group(w: World) -> list[dict[str, Any]]:
    _admin_post(w, f"/admin/auth/group/{w.group.pk}/delete/", {"post": "yes"})
    before = {"id": w.group.pk, "name": "Editors", "permissions": []}
    return [expect("group.deleted", w.admin, "group", w.group.pk, before=before)]


@write_path("admin auth.group action delete_selected")
def admin_deletes_selected_groups(w: World) -> list[dict[str, Any]]:
    _bulk_action(w, "auth/group", "delete_selected", [w.group.pk])
    before = {"id": w.group.pk, "name": "Editors", "permissions": []}
    return [expect("group.deleted", w.admin, "group", w.group.pk, before=before)]


# --- Management commands


def _run(*args: Any) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@write_path("command create_source", "service source_get_or_create", "service api_key_create")
def command_creates_a_source_and_key(w: World) -> list[dict[str, Any]]:
    _run("create_source", "lab-logger")
    source = Source.objects.get(name="lab-logger")
    key = ApiKey.objects.get(source=source)
    actor = command("create_source")
    key_after = {
        "owner": "source:lab-logger",
        "prefix": key.prefix,
        "name": "created by create_source",
        "expires_at": None,
    }
    return [
        expect(
            "source.created",
            actor,
            "source",
            source.pk,
            after={"name": "lab-logger", "description": "", "is_active": True},
        ),
        expect("api_key.created", actor, "api_key", key.pk, after=key_after),
    ]


@write_path("command create_api_token", "service api_key_create")
def command_creates_a_personal_token(w: World) -> list[dict[str, Any]]:
    _run("create_api_token", w.reviewer.username)
    key = ApiKey.objects.get(user=w.reviewer)
    after = {"owner": f"user:{w.reviewer.username}", "prefix": key.prefix, "name": "personal token", "expires_at": None}
    return [expect("api_key.created", command("create_api_token"), "api_key", key.pk, after=after)]


@write_path("command export_conversations", "service export_record")
def command_exports_conversations(w: World) -> list[dict[str, Any]]:
    output = w.tmp / "out.ndjson"
    call_command(
        "export_conversations",
        "--format",
        "openai",
        "--status",
        "unreviewed",
        "--output",
        str(output),
        stderr=io.StringIO(),
    )
    assert len(output.read_text().splitlines()) == 2
    after = {"format": "openai", "filters": {"status": "unreviewed"}, "count": 2}
    return [expect("conversation.exported", command("export_conversations"), "conversations", "filtered", after=after)]


@write_path("command import_conversations", "service source_get_or_create", "service conversation_ingest")
def command_imports_conversations(w: World) -> list[dict[str, Any]]:
    path = w.tmp / "one.json"
    path.write_text(json.dumps(_chat(*FIRST_TURN, chat_id="imported")))
    _run("import_conversations", str(path), "--source", "files", "--no-progress")
    source = Source.objects.get(name="files")
    conversation = Conversation.objects.get(source=source)
    actor = command("import_conversations")
    after = ingest_state(
        conversation, external_id="imported", format="chat_document", messages_added=2, receipt=ANY, api_key=None
    )
    return [
        expect(
            "source.created", actor, "source", source.pk, after={"name": "files", "description": "", "is_active": True}
        ),
        expect(
            "conversation.created",
            actor,
            "conversation",
            conversation.uuid,
            after=after,
            conversation=conversation.uuid,
        ),
    ]


@write_path("command seed_demo", "service label_create", "service conversation_ingest")
def command_seeds_the_demo_and_a_second_run_writes_nothing(w: World) -> list[dict[str, Any]]:
    from chats.management.commands.seed_demo import LABELS

    _run("seed_demo", "--count", "3")
    _run("seed_demo", "--count", "3")  # idempotent: no more events
    actor = command("seed_demo")
    demo = Source.objects.get(name="demo")
    demo_reviewer = User.objects.get(username="demo-reviewer")
    reviewer_row = user_row(demo_reviewer, password="(unusable)", first_name="Demo", groups=["Reviewers"])
    expected = [
        expect(
            "source.created", actor, "source", demo.pk, after={"name": "demo", "description": "", "is_active": True}
        ),
        expect("user.created", actor, "user", demo_reviewer.pk, after=reviewer_row),
    ]
    expected += [
        expect("label.created", actor, "label", label.pk, after={"name": label.name, "description": label.description})
        for label in Label.objects.filter(name__in=LABELS).exclude(pk=w.label.pk)
    ]
    for conversation in Conversation.objects.filter(source=demo):
        after = ingest_state(conversation) | {
            "external_id": conversation.external_id,
            "format": conversation.input_format,
        }
        after |= {"messages_added": conversation.message_count, "receipt": ANY, "api_key": None}
        if conversation.policy_violation is not None:  # a Record QA document: judged against its context
            after["policy_violation"] = conversation.policy_violation
        uuid_ = conversation.uuid
        expected.append(expect("conversation.created", actor, "conversation", uuid_, after=ANY, conversation=uuid_))
        if not conversation.feedback.filter(author=demo_reviewer).exists():
            expected[-1]["after"] = after  # its state has not moved since
        if conversation.review_status == "reviewed":
            status = {"before": {"review_status": "unreviewed"}, "after": {"review_status": "reviewed"}}
            expected.append(
                expect(
                    "conversation.status_changed", demo_reviewer, "conversation", uuid_, **status, conversation=uuid_
                )
            )
    for feedback in Feedback.objects.filter(author=demo_reviewer):
        uuid_ = feedback.conversation.uuid
        expected.append(
            expect(
                "feedback.created",
                demo_reviewer,
                "feedback",
                feedback.uuid,
                after=feedback.snapshot(),
                conversation=uuid_,
            )
        )
    assert len(expected) > 40
    return expected


def _pruned(w: World, receipt: IngestionReceipt, days: int, target: str, actor: User | str) -> dict[str, Any]:
    """The event of a prune that removed `receipt`'s payload, which no other receipt named."""
    receipt.refresh_from_db()
    assert receipt.payload_id is None and receipt.payload_sha256 and receipt.outcome == "created"
    after = {
        "older_than_days": days,
        "cutoff": ANY,
        "receipts": 1,
        "payloads_deleted": 1,
        "payload_bytes_deleted": receipt.size_bytes,
        "stored_bytes_deleted": ANY,
    }
    return expect("receipt.payloads_pruned", actor, "receipts", target, after=after)


@write_path("command prune_receipt_payloads", "service receipt_payloads_prune")
def command_prunes_the_payloads_of_old_receipts(w: World) -> list[dict[str, Any]]:
    old = IngestionReceipt.objects.filter(conversation=w.chat)
    old.update(created_at=timezone.now() - timedelta(days=40))
    assert "Would remove the payloads of 1 receipt" in _run("prune_receipt_payloads", "--days", "30", "--dry-run")
    _run("prune_receipt_payloads")  # the setting keeps payloads forever: nothing to do
    assert "Removed the payloads of 1 receipt" in _run("prune_receipt_payloads", "--days", "30")
    assert "of 0 receipt" in _run("prune_receipt_payloads", "--days", "30")  # nothing left: no event
    return [_pruned(w, old.get(), 30, "all", command("prune_receipt_payloads"))]


# --- Read audit: a view is recorded in its own table, never as an audit event; pruning views is audited


@write_path("GET chats:thread", "GET chats:thread_messages", "service conversation_view_record")
def reading_a_thread_records_a_view_and_no_event(w: World) -> list[dict[str, Any]]:
    client = w.page(w.reviewer)
    for _ in range(2):
        assert client.get(w.conversation.get_absolute_url()).status_code == 200
    # A window of the same thread loaded by the page's script: the same reading, within the same view.
    assert client.get(f"{w.conversation.get_absolute_url()}messages/?after=0").status_code == 200
    views = ConversationView.objects.filter(conversation_uuid=w.conversation.uuid)
    assert list(views.values_list("viewer_name", "via")) == [(w.reviewer.username, "page")]
    return []


@write_path("GET api:conversation-detail", "service conversation_view_record")
def reading_a_conversation_through_the_api_records_a_view_and_no_event(w: World) -> list[dict[str, Any]]:
    assert w.api().get(f"/api/v1/conversations/{w.chat.uuid}/").status_code == 200
    assert w.api(w.reviewer).get(f"/api/v1/conversations/{w.chat.uuid}/").status_code == 200
    views = ConversationView.objects.filter(conversation_uuid=w.chat.uuid).order_by("id")
    assert list(views.values_list("viewer_name", "via")) == [(f"source:{w.source.name}", "api"), ("rita", "api")]
    return []


@write_path("command prune_view_events", "service view_events_prune")
def command_prunes_old_view_events(w: World) -> list[dict[str, Any]]:
    old = timezone.now() - timedelta(days=40)
    for via in ("page", "api"):
        ConversationView.objects.create(conversation_uuid=w.chat.uuid, viewer_name="rita", via=via, created_at=old)
    ConversationView.objects.create(conversation_uuid=w.chat.uuid, viewer_name="rita", via="page")
    assert "Deleted 2 view event(s)" in _run("prune_view_events", "--days", "30")
    assert "Deleted 0 view event(s)" in _run("prune_view_events", "--days", "30")  # nothing left: no event
    assert ConversationView.objects.count() == 1
    after = {"older_than_days": 30, "cutoff": ANY, "deleted": 2}
    return [expect("view_events.pruned", command("prune_view_events"), "view_events", "all", after=after)]


@write_path("admin chats.ingestionreceipt action prune_payloads", "service receipt_payloads_prune")
def admin_prunes_the_payloads_of_selected_receipts(w: World) -> list[dict[str, Any]]:
    receipt = IngestionReceipt.objects.get(conversation=w.chat)
    form = {"action": "prune_payloads", "_selected_action": [receipt.pk], "older_than_days": "0"}
    preview = _admin_post(w, "/admin/chats/ingestionreceipt/", form)
    assert b"1 receipt created before" in preview.content  # the count, before anything is removed
    assert IngestionReceipt.objects.get(pk=receipt.pk).payload_id is not None
    _admin_post(w, "/admin/chats/ingestionreceipt/", {**form, "apply": "yes"})
    return [_pruned(w, receipt, 0, "selected", w.admin)]


@write_path("command create_demo_admin")
def command_creates_the_demo_admin_and_reviewer(w: World) -> list[dict[str, Any]]:
    with override_settings(DEBUG=True):
        _run("create_demo_admin", "--username", "demo-admin")
    actor = command("create_demo_admin")
    demo_admin = User.objects.get(username="demo-admin")
    demo_reviewer = User.objects.get(username="reviewer")
    return [
        expect(
            "user.created", actor, "user", demo_admin.pk, after=user_row(demo_admin, is_staff=True, is_superuser=True)
        ),
        expect("user.created", actor, "user", demo_reviewer.pk, after=user_row(demo_reviewer, groups=["Reviewers"])),
    ]


@write_path("command verify_audit", "service audit_chain_verify")
def command_verifies_the_audit_chain(w: World) -> list[dict[str, Any]]:
    count, last = AuditEvent.objects.count(), AuditEvent.objects.order_by("id").last()
    assert last is not None
    assert f"intact: {count} event(s)" in _run("verify_audit")
    after = {
        "ok": True,
        "events_checked": count,
        "last_id": last.pk,
        "last_hash": last.event_hash,
        "broken_id": None,
        "problem": "",
    }
    return [expect("audit.verified", command("verify_audit"), "audit_chain", "all", after=after)]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            path,
            id=path.name,
            marks=([pytest.mark.xfail(strict=True, reason=path.xfail)] if path.xfail else [])
            # Elsewhere the bulk endpoint takes the ordinary path, document by document.
            + ([pytest.mark.postgres] if path.name in POSTGRES_ONLY_PATHS else []),
        )
        for path in WRITE_PATHS
    ],
)
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    mark = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    services_used = [cover.removeprefix("service ") for cover in path.covers if cover.startswith("service ")]
    started = timezone.now()
    with _spying(services_used) as calls, _audited_writes_only():
        expected = path.perform(world)
    events = AuditEvent.objects.filter(id__gt=mark).order_by("id")

    assert sorted(stored(events), key=_order) == sorted(expected, key=_order)
    for event in events:
        assert started <= event.created_at <= timezone.now()
        recorded = json.dumps([event.before, event.after])
        assert "md5$" not in recorded and world.raw_key not in recorded  # never a password hash or a key
    for name, count in calls.items():
        assert count, f"{path.name} does not go through the service {name}"


def _service_functions() -> dict[str, Callable[..., Any]]:
    """The public functions of every module of chats.services, by name."""
    found: dict[str, Callable[..., Any]] = {}
    for module_info in pkgutil.iter_modules(chats.services.__path__):
        module = importlib.import_module(f"chats.services.{module_info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = function
    return found


@contextmanager
def _spying(names: list[str]) -> Iterator[dict[str, int]]:
    """Count the calls of the named services (however their callers import them), to check that an entry goes
    through the services it says it covers."""
    functions = _service_functions()
    codes = {inspect.unwrap(functions[name]).__code__: name for name in names}
    calls = dict.fromkeys(names, 0)
    tool = sys.monitoring.OPTIMIZER_ID
    sys.monitoring.use_tool_id(tool, "audit-trail-spy")

    def started(code: Any, offset: int) -> None:
        calls[codes[code]] += 1

    try:
        sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, started)
        for code in codes:
            sys.monitoring.set_local_events(tool, code, sys.monitoring.events.PY_START)
        yield calls
    finally:
        for code in codes:
            sys.monitoring.set_local_events(tool, code, 0)
        sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(tool)


# Rows that are records themselves (the audit log, receipts, views, the admin's own log, sessions), and signing in.
UNAUDITED = {
    "chats.auditevent",
    # A worker's records of background work: the parts of an export job's result (asking for the job is audited,
    # downloading it too), and a queue rule's runs (what a run adds is audited by rule_run).
    "chats.exportjobpart",
    "chats.queuerulerun",
    "chats.ingestionreceipt",
    "chats.conversationview",
    "admin.logentry",
    "sessions.session",
}
# Failed sign-ins, which django-axes records as people sign in; removing them (unlocking) is audited.
RECORDED_BY_SIGNING_IN = {"axes.accessattempt"}


@contextmanager
def _audited_writes_only() -> Iterator[None]:
    """Fail any save, delete or many-to-many change of an audited model made outside an audited write (a service,
    or `audited`/`audited_delete`): the one way to change a row is the audited one."""

    def check(sender: type[Model], **kwargs: Any) -> None:
        model = kwargs["instance"].__class__ if sender._meta.auto_created else sender
        if model._meta.label_lower in UNAUDITED or in_audited_write():
            return
        if model._meta.label_lower in RECORDED_BY_SIGNING_IN and kwargs["signal"] is signals.pre_save:
            return
        if model is User and set(kwargs.get("update_fields") or ()) == {"last_login"}:
            return  # signing in
        raise AssertionError(f"{model._meta.label} written outside an audited write")

    receivers = [(signals.pre_save, check), (signals.pre_delete, check), (signals.m2m_changed, check)]
    for signal, receiver in receivers:
        signal.connect(receiver, weak=False, dispatch_uid="audited-writes-only")
    try:
        yield
    finally:
        for signal, _ in receivers:
            signal.disconnect(dispatch_uid="audited-writes-only")


def test_a_write_that_bypasses_the_audit_is_caught(world: World) -> None:
    with _audited_writes_only():
        with audited(Label(name="kept"), actor=world.admin) as label:
            label.save()
        with (
            pytest.raises(AssertionError, match=r"chats\.Label written outside an audited write"),
            transaction.atomic(),
        ):
            Label.objects.create(name="unaudited")
        with pytest.raises(AssertionError, match=r"auth\.User written outside"), transaction.atomic():
            world.reviewer.groups.add(world.group)
        attempt = AccessAttempt.objects.create(username="rita", ip_address="192.0.2.1", failures_since_start=5)
        with pytest.raises(AssertionError, match=r"axes\.AccessAttempt written outside"), transaction.atomic():
            attempt.delete()

    assert AuditEvent.objects.filter(action="label.created", target_id=str(label.pk)).exists()


@pytest.mark.postgres  # elsewhere the bulk endpoint takes the ordinary path
def test_the_bulk_fast_path_writes_the_events_the_ordinary_path_writes(world: World) -> None:
    documents = [_chat(*FIRST_TURN, chat_id=f"same-{n}") for n in range(3)]
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


# --------------------------------------------------------------------------------------------------------------
# The table is complete: every way to write is in it, or said to write nothing audited


NOT_WRITES = {
    # Ingestion's steps that write nothing themselves: checking and parsing, finding the conversation, reading
    # what is stored, and building the rows and the event that conversation_store and the bulk writer save.
    "service document_prepare": "parses",
    "service target_external_ids": "read",
    "service idless_lock": "takes a lock",
    # The search index is derived from stored messages: rebuilding it changes no audited state.
    "service search_index": "derives search vectors",
    "command index_search": "derives search vectors",
    "command citus_ddl": "prints SQL read from the catalog; changes nothing",
    "service search_index_stale": "derives search vectors",
    "service search_index_soon": "schedules the search indexer",
    "service cyclic_gc_paused": "holds Python's garbage collector off around a bulk ingestion",
    # Called inside every ingestion's write, whose entries cover it: the queue rules' events are the ingestion's.
    "service conversations_changed": "part of an ingestion's write",
    "service stored_snapshots": "read",
    "service receipt_values": "builds a receipt's values",
    "service ingest_event": "builds an unsaved event",
    "service sender_actor": "computes who an ingestion's events name",
    "service plan_rows": "builds rows",
    "service new_conversation": "builds an unsaved conversation",
    # conversation_store's steps, which the ingestion paths cover through it: refusing a document (a receipt
    # only), storing a receipt, and writing a plan's rows (its event is written by conversation_store).
    "service reject": "a step of conversation_store: a receipt, no audited state",
    "service receipt_create": "a step of conversation_store: a receipt, no audited state",
    "service document_content": "computes the bytes a document is kept as",
    "service receipt_payloads_save": "a step of every receipt's writing: the bytes it names, no audited state",
    "service write_plan": "a step of conversation_store, which writes the event",
    # Signing in and out changes a session (and last_login), no audited state.
    "POST login": "signing in",
    "PUT login": "signing in (Django's form views take PUT as POST)",
    "POST logout": "signing out",
    "admin:login": "signing in",
    "admin:logout": "signing out",
    # Reads.
    "GET chats:home": "read",
    "GET chats:conversation_list": "read",
    "GET chats:next_unreviewed": "read",
    "GET chats:feedback_form": "read",
    "GET api:receipt": "read",
    "GET api:receipt-payload": "read",
    "admin:chats_ingestionreceipt_payload": "read (a download)",
    "GET api:artifacts": "read",
    "GET api:artifact-detail": "read",
    "GET chats:artifact_list": "read",
    "GET chats:artifact_detail": "read",
    "GET chats:audit_list": "read",
    "GET chats:audit_event": "read",
    "GET api:labels": "read",
    "GET api:schema": "read",
    "GET api:docs": "read",
    "GET api:conversation-list": "read",
    "GET api:dataset-detail": "read",
    "GET api:export-job-detail": "read",
    "GET chats:export_jobs": "read",
    "GET api:queue-rule-run-detail": "read",
    "GET api:queue-agreement": "read",
    "GET chats:queue_list": "read",
    "GET chats:queue_detail": "read",
    "GET chats:queue_adjudicate": "read",
    # The review page records the view, as the thread page does (ConversationView, apart from the audit log).
    "GET chats:queue_item": "read (a view recorded)",
    "admin:index": "read",
    "admin:app_list": "read",
    "admin:jsi18n": "read",
    "admin:autocomplete": "read",
    "admin:view_on_site": "read (a redirect)",
    "admin:password_change_done": "read",
    # Services that are the audit trail itself, or read, or keep derived counters.
    "service audit_record": "the audit trail itself",
    "service audit_snapshot": "the audit trail itself",
    "service audit_record_saved": "the audit trail itself",
    "service audit_record_deleted": "the audit trail itself",
    "service audit_event": "the audit trail itself",
    "service audit_insert": "the audit trail itself (every event is chained and stored through it)",
    "service audit_chain_digest": "the audit trail itself (computes an event's hash)",
    "service audit_chain_check": "the audit trail itself (a read: walks the chain)",
    "service audited": "the audit trail itself (the admin's and the commands' writes go through it)",
    "service audited_delete": "the audit trail itself",
    "service audited_update": "the audit trail itself (the source and label services go through it)",
    "service audited_write": "the audit trail itself (a decorator)",
    "service audit_scope": "the audit trail itself",
    "service in_audited_write": "the audit trail itself (a read)",
    "service jsonable": "computes",
    "service feedback_ensure_owner": "checks a permission",
    "service feedback_summary_refresh": "derived counters, refreshed inside the audited feedback services",
}


def _walk(patterns: list[Any], namespace: str = "", converters: dict[str, Any] | None = None) -> Iterator[Any]:
    for entry in patterns:
        found = {**(converters or {}), **entry.pattern.converters}
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if namespace and entry.namespace else entry.namespace or namespace
            yield from _walk(entry.url_patterns, inner, found)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
            yield name, entry.callback, found


def _sample(converter: Any) -> Any:
    if isinstance(converter, UUIDConverter):
        return uuid.uuid4()
    return 1 if isinstance(converter, IntConverter) else "x"


def _write_methods(name: str, callback: Any, converters: dict[str, Any]) -> set[str]:
    view = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view is not None:
        allowed = (
            set(callback.actions)
            if hasattr(callback, "actions")
            else {m for m in view.http_method_names if hasattr(view, m)}
        )
        return {method.upper() for method in allowed & set(view.http_method_names)} & set(WRITE_METHODS)
    # A function view: require_GET / require_POST answer 405 to other methods before anything else.
    url = reverse(name, kwargs={key: _sample(converter) for key, converter in converters.items()})
    client = Client()
    return {method for method in WRITE_METHODS if client.generic(method, url).status_code != 405}


def _standard_admin_urls() -> set[str]:
    return {
        f"admin:{model._meta.app_label}_{model._meta.model_name}_{suffix}"
        for model in admin.site._registry
        for suffix in ("changelist", "add", "history", "delete", "change")
    }


def _url_keys() -> set[str]:
    keys = set()
    standard = _standard_admin_urls()
    for name, callback, converters in _walk(get_resolver().url_patterns):
        if name is None:
            continue  # the admin's catch-all and object redirect: no view of their own
        if name.startswith("admin:"):
            if name not in standard:
                keys.add(name)  # the site's own pages and the admins' extra ones
            continue
        methods = _write_methods(name, callback, converters)
        keys |= {f"{method} {name}" for method in methods} or {f"GET {name}"}
    return keys


def _admin_keys(superuser: User) -> set[str]:
    """What a superuser can do in each admin: add, change, delete, and each action."""
    request = RequestFactory().get("/admin/")
    request.user = superuser
    keys = set()
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        for operation in ("add", "change", "delete"):
            check = getattr(model_admin, f"has_{operation}_permission")
            if check(request) if operation == "add" else check(request, None):
                keys.add(f"admin {label} {operation}")
        keys |= {f"admin {label} action {action}" for action in model_admin.get_actions(request)}
    return keys


def _service_keys() -> set[str]:
    return {f"service {name}" for name in _service_functions()}


def _command_keys() -> set[str]:
    return {f"command {module.name}" for module in pkgutil.iter_modules(chats.management.commands.__path__)}


def test_every_write_path_is_in_the_table_or_said_to_write_nothing(admin_user: User) -> None:
    required = _url_keys() | _admin_keys(admin_user) | _service_keys() | _command_keys()
    covered = {cover for path in WRITE_PATHS for cover in path.covers}

    assert sorted(required - covered - NOT_WRITES.keys()) == [], "write paths without an audit test"
    assert sorted((covered | NOT_WRITES.keys()) - required) == [], "entries for write paths that no longer exist"
    assert sorted(covered & NOT_WRITES.keys()) == []


def test_every_admin_that_writes_rows_audits_them(admin_user: User) -> None:
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    for model, model_admin in admin.site._registry.items():
        writes = (
            model_admin.has_add_permission(request)
            or model_admin.has_change_permission(request, None)
            or model_admin.has_delete_permission(request, None)
        )
        assert not writes or isinstance(model_admin, AuditedModelAdmin), model


def test_the_completeness_check_notices_a_new_write(admin_user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    def label_merge(*, label: Label, into: Label) -> None:
        raise NotImplementedError

    label_merge.__module__ = label_services.__name__
    monkeypatch.setattr(label_services, "label_merge", label_merge, raising=False)
    listed = {cover for path in WRITE_PATHS for cover in path.covers} | NOT_WRITES.keys()

    assert "service label_merge" in _service_keys() - listed
    assert {"POST chats:feedback_save", "GET api:export", "admin:password_change"} <= _url_keys()
    assert {"admin auth.user action delete_selected", "admin chats.label delete"} <= _admin_keys(admin_user)


# --------------------------------------------------------------------------------------------------------------
# PostgreSQL: the audit log is append-only


@pytest.fixture
def event(world: World) -> AuditEvent:
    return audit_record(
        actor=world.reviewer, action="label.updated", target_type="label", target_id=1, before={}, after={}
    )


ORM_REWRITES: dict[str, Callable[[AuditEvent], Any]] = {
    "save": lambda event: AuditEvent.objects.filter(pk=event.pk).first().save(),  # type: ignore[union-attr]
    "update": lambda event: AuditEvent.objects.filter(pk=event.pk).update(action="forged"),
    "update to no actor and more": lambda event: AuditEvent.objects.filter(pk=event.pk).update(
        actor=None, after={"x": 1}
    ),
    "delete": lambda event: AuditEvent.objects.get(pk=event.pk).delete(),
    "queryset delete": lambda event: AuditEvent.objects.all().delete(),
}


@pytest.mark.postgres
@pytest.mark.parametrize("rewrite", ORM_REWRITES.values(), ids=ORM_REWRITES.keys())
def test_the_orm_cannot_change_or_delete_an_audit_event(
    event: AuditEvent, rewrite: Callable[[AuditEvent], Any]
) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        rewrite(event)

    assert AuditEvent.objects.filter(pk=event.pk, action="label.updated", actor=event.actor).exists()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE chats_auditevent SET after = '{}'::jsonb, action = 'forged' WHERE id = %s",
        "UPDATE chats_auditevent SET actor_username = 'someone else' WHERE id = %s",
        "DELETE FROM chats_auditevent WHERE id = %s",
    ],
)
def test_raw_sql_cannot_change_or_delete_an_audit_event(event: AuditEvent, sql: str) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [event.pk])

    assert AuditEvent.objects.filter(pk=event.pk, action="label.updated", actor_username="rita").exists()


@pytest.mark.postgres
def test_deleting_a_user_keeps_their_events_under_their_name(world: World) -> None:
    someone = User.objects.create_user(username="leaver")
    conversation_set_review_status(actor=someone, conversation=world.conversation, status="in_review")
    feedback_submit(author=world.reviewer, conversation=world.chat, score=1)
    someone_events = list(AuditEvent.objects.filter(actor=someone).values_list("pk", flat=True))

    someone.delete()

    kept = AuditEvent.objects.filter(pk__in=someone_events)
    assert [(e.action, e.actor_id, e.actor_username) for e in kept] == [("conversation.status_changed", None, "leaver")]
    assert AuditEvent.objects.filter(actor=world.reviewer, action="feedback.created").count() == 2


@pytest.mark.postgres
def test_a_user_deleted_in_the_admin_keeps_their_events(world: World) -> None:
    conversation_set_review_status(actor=world.other_user, conversation=world.conversation, status="reviewed")
    pk = world.other_user.pk

    _admin_post(world, f"/admin/auth/user/{pk}/delete/", {"post": "yes"})

    assert not User.objects.filter(pk=pk).exists()
    kept = AuditEvent.objects.get(action="conversation.status_changed", actor_username="uma")
    assert kept.actor_id is None
    assert AuditEvent.objects.get(action="user.deleted", target_id=str(pk)).actor == world.admin


@pytest.mark.postgres
def test_the_admin_cannot_delete_audit_events_even_for_a_superuser(world: World) -> None:
    client = world.page(world.admin)
    event = AuditEvent.objects.order_by("pk").first()
    assert event is not None
    count = AuditEvent.objects.count()

    refused = client.post(f"/admin/chats/auditevent/{event.pk}/delete/", {"post": "yes"})
    changed = client.post(f"/admin/chats/auditevent/{event.pk}/change/", {"action": "forged"})
    bulk = client.post(
        "/admin/chats/auditevent/", {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"}
    )

    assert (refused.status_code, changed.status_code) == (403, 403)
    assert bulk.status_code in (200, 302)  # no such action for this admin
    assert AuditEvent.objects.count() == count
    assert "delete_selected" not in admin.site._registry[AuditEvent].get_actions(_admin_request(world.admin))


def _admin_request(user: User) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user
    return request
