"""import_conversations: files of documents (JSON, JSONL, a ChatGPT export's zip, an Open WebUI export) stored as the
ingest API stores them, going on past bad items and failing at the end."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from chats.models import Conversation, Feedback, IngestionReceipt, Message
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


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
