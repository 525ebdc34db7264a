"""The audit table's management command paths (chats.management.commands): what each command writes, from the
sources and keys it creates to the prunes and the audit chain's verification. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import TestCase, override_settings
from django.utils import timezone

from chats.models import ApiKey, AuditEvent, Conversation, Feedback, IngestionReceipt, Label, ReadEvent, Source
from tests.security.audit_paths import (
    FIRST_TURN,
    World,
    WritePath,
    chat,
    check_write_path,
    command,
    declared_in,
    expect,
    ingest_state,
    make_world,
    pruned,
    user_row,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


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


@write_path("command export_conversations", "service conversations_export_stream", "service export_record")
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
    path.write_text(json.dumps(chat(*FIRST_TURN, chat_id="imported")))
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


@write_path("command prune_receipt_payloads", "service receipt_payloads_prune")
def command_prunes_the_payloads_of_old_receipts(w: World) -> list[dict[str, Any]]:
    old = IngestionReceipt.objects.filter(conversation=w.chat)
    old.update(created_at=timezone.now() - timedelta(days=40))
    assert "Would remove the payloads of 1 receipt" in _run("prune_receipt_payloads", "--days", "30", "--dry-run")
    _run("prune_receipt_payloads")  # the setting keeps payloads forever: nothing to do
    assert "Removed the payloads of 1 receipt" in _run("prune_receipt_payloads", "--days", "30")
    assert "of 0 receipt" in _run("prune_receipt_payloads", "--days", "30")  # nothing left: no event
    return [pruned(w, old.get(), 30, "all", command("prune_receipt_payloads"))]


@write_path("command prune_read_audit", "service read_audit_prune")
def command_prunes_old_read_events(w: World) -> list[dict[str, Any]]:
    old = timezone.now() - timedelta(days=40)
    for via in ("page", "api"):
        ReadEvent.objects.create(conversation_uuid=w.chat.uuid, viewer_name="rita", via=via, created_at=old)
    ReadEvent.objects.create(conversation_uuid=w.chat.uuid, viewer_name="rita", via="page")
    assert "Deleted 2 read event(s)" in _run("prune_read_audit", "--days", "30")
    assert "Deleted 0 read event(s)" in _run("prune_read_audit", "--days", "30")  # nothing left: no event
    assert ReadEvent.objects.count() == 1
    after = {"older_than_days": 30, "cutoff": ANY, "deleted": 2}
    return [expect("view_events.pruned", command("prune_read_audit"), "view_events", "all", after=after)]


@write_path("command prune_view_events", "service read_audit_prune")
def deprecated_command_name_prunes_as_prune_read_audit(w: World) -> list[dict[str, Any]]:
    # The old name, kept for one release: the same prune, recorded as the new command.
    ReadEvent.objects.create(
        conversation_uuid=w.chat.uuid, viewer_name="rita", via="api", created_at=timezone.now() - timedelta(days=40)
    )
    assert "Deleted 1 read event(s)" in _run("prune_view_events", "--days", "30")
    after = {"older_than_days": 30, "cutoff": ANY, "deleted": 1}
    return [expect("view_events.pruned", command("prune_read_audit"), "view_events", "all", after=after)]


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


# --- Ingestion that a worker never applied


@write_path("command requeue_ingest", "service queued_receipts_requeue", "service queued_receipts_ingest")
def command_requeue_ingest_applies_what_is_still_queued(w: World) -> list[dict[str, Any]]:
    # A request whose task was never delivered (the callback that would send it is dropped: no commit).
    with TestCase.captureOnCommitCallbacks(execute=False):
        response = w.api().post(
            "/api/v1/ingest/bulk/?async=true",
            data=json.dumps([chat(*FIRST_TURN, chat_id="lost")]),
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


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
