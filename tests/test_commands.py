"""The management commands other tools rely on."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    Feedback,
    IngestionReceipt,
    Message,
    Source,
    ToolCall,
)
from tests.fixture_documents import load_fixture

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_source_prints_a_key_that_authenticates_and_stores_only_its_hash():
    output = run("create_source", "lab-logger")
    key = output.strip().splitlines()[-1]

    stored = ApiKey.objects.get(source__name="lab-logger")
    assert stored.key_hash == ApiKey.hash_key(key)
    assert not ApiKey.objects.filter(key_hash=key).exists() and key not in stored.prefix
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    response = client.post(
        "/api/v1/ingest/",
        data=json.dumps({"chat_history": [{"role": "user", "content": "hi"}]}),
        content_type="application/json",
    )
    assert response.status_code == 201


def test_create_source_reuses_the_source_and_makes_a_new_key():
    first = run("create_source", "lab-logger").strip().splitlines()[-1]
    second = run("create_source", "lab-logger").strip().splitlines()[-1]

    assert first != second
    assert Source.objects.filter(name="lab-logger").count() == 1
    assert ApiKey.objects.filter(source__name="lab-logger").count() == 2


def _state() -> dict[str, Any]:
    return {
        "conversations": list(
            Conversation.objects.order_by("id").values_list(
                "id", "external_id", "review_status", "message_count", "feedback_count"
            )
        ),
        "messages": Message.objects.count(),
        "tool_calls": ToolCall.objects.count(),
        "feedback": list(Feedback.objects.order_by("id").values_list("id", "score", "comment")),
        "audit": AuditEvent.objects.count(),
    }


def test_seed_demo_twice_equals_once():
    run("seed_demo")
    once = _state()

    run("seed_demo")

    assert _state() == once
    assert 40 <= len(once["conversations"]) <= 70
    assert Conversation.objects.filter(branch_count__gt=0).exists()
    assert ToolCall.objects.filter(result_message__isnull=True).exists()  # an unanswered call
    assert (
        Feedback.objects.filter(origin="masterbrain").exists() and Feedback.objects.filter(origin="reviewer").exists()
    )
    assert set(Conversation.objects.values_list("input_format", flat=True)) >= {
        "openai",
        "chat_document",
        "record_qa",
        "chat_history",
        "chat_graph",
        "chatgpt_export",
    }


def test_import_reads_json_and_jsonl_keeps_going_and_fails_at_the_end(tmp_path: Path):
    good = {"conversation_id": "a", "chat_history": [{"role": "user", "content": "hi"}]}
    (tmp_path / "one.json").write_text(json.dumps(good))
    (tmp_path / "many.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"conversation_id": "b", "chat_history": [{"role": "user", "content": "x"}]}),
                "{broken",
                json.dumps({"chat_history": [{"content": "no role"}]}),
            ]
        )
    )
    out = io.StringIO()

    with pytest.raises(CommandError) as raised:
        call_command(
            "import_conversations",
            str(tmp_path / "one.json"),
            str(tmp_path / "many.jsonl"),
            "--no-progress",
            stdout=out,
        )

    assert raised.value.returncode == 1
    assert "2 created" in out.getvalue() and "2 failed" in out.getvalue()
    assert "many.jsonl:2" in out.getvalue() and "many.jsonl:3/chat_history/0/role" in out.getvalue()
    assert Conversation.objects.count() == 2
    assert IngestionReceipt.objects.filter(outcome="rejected").count() == 1


def test_import_of_a_chatgpt_export_zip_applies_its_message_feedback(tmp_path: Path):
    conversations = load_fixture("chatgpt_export/conversations.json")
    feedback = load_fixture("chatgpt_export/message_feedback.json")
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", json.dumps(conversations))
        zf.writestr("message_feedback.json", json.dumps(feedback))

    output = run("import_conversations", str(archive), "--source", "chatgpt", "--no-progress")

    assert f"{len(conversations)} created" in output
    imported = Feedback.objects.filter(origin="chatgpt")
    assert imported.count() >= 1
    rated = {entry["message_id"]: entry["rating"] for entry in feedback}
    for item in imported.select_related("message"):
        assert item.message is not None and item.message.key in rated
        assert item.score == (1 if rated[item.message.key] == "thumbsUp" else -1)
    # Importing again changes nothing.
    assert "0 created" in run("import_conversations", str(archive), "--source", "chatgpt", "--no-progress")


def test_import_of_an_open_webui_export_imports_each_chat_with_its_tree_and_ratings(tmp_path: Path):
    [pcr] = load_fixture("openwebui/colony_pcr_regenerated_and_rated.json")
    tae = load_fixture("openwebui/minimal_single_item.json")
    export = tmp_path / "chat-export-1747130100.json"
    export.write_text(json.dumps([pcr, tae]))

    output = run("import_conversations", str(export), "--source", "openwebui", "--no-progress")

    assert "2 created" in output
    imported = Conversation.objects.filter(input_format="openwebui")
    assert sorted(imported.values_list("external_id", flat=True)) == sorted([pcr["id"], tae["id"]])
    branched = imported.get(external_id=pcr["id"])
    assert branched.active_leaf_key == pcr["chat"]["history"]["currentId"]
    assert Message.objects.filter(conversation=branched).count() == 5
    scores = list(Feedback.objects.filter(origin="openwebui").values_list("score", flat=True))
    assert None not in scores  # imported ratings always carry a score
    assert sorted(score for score in scores if score is not None) == [-1, 1]
    assert "0 created" in run("import_conversations", str(export), "--source", "openwebui", "--no-progress")


def test_import_refuses_a_zip_bomb_with_a_clear_error_and_stores_nothing(tmp_path: Path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", b"[" + b" " * (3 * 2**20) + b"]")
    out = io.StringIO()

    with pytest.raises(CommandError):
        call_command("import_conversations", str(archive), "--max-member-mb", "1", "--no-progress", stdout=out)

    assert "over the limit of 1,048,576" in out.getvalue()
    assert Conversation.objects.count() == 0
