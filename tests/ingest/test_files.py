"""Reading conversation files: one item per conversation document, each labelled with where it came from."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from chats.ingest.files import ArchiveLimits, iter_items
from tests.factories.documents import fixture_path, load_fixture


def test_a_whole_conversations_json_gives_each_conversation_with_its_feedback(tmp_path: Path) -> None:
    conversations = load_fixture("chatgpt_export/conversations.json")
    feedback = load_fixture("chatgpt_export/message_feedback.json")
    shutil.copy(fixture_path("chatgpt_export/conversations.json"), tmp_path / "conversations.json")
    shutil.copy(fixture_path("chatgpt_export/message_feedback.json"), tmp_path / "message_feedback.json")

    items = list(iter_items(tmp_path))

    assert [item.document for item in items] == conversations
    assert [item.label for item in items] == [
        f"{tmp_path / 'conversations.json'}[{index}]" for index in range(len(conversations))
    ]
    assert not any(item.error for item in items)
    for item in items:
        expected = [entry for entry in feedback if entry["conversation_id"] == item.document["id"]]
        assert (item.message_feedback or []) == expected


def test_a_zip_export_reads_like_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(fixture_path("chatgpt_export/conversations.json"), "export/conversations.json")

    items = list(iter_items(archive))

    assert [item.document for item in items] == load_fixture("chatgpt_export/conversations.json")
    assert items[0].label == f"{archive}:conversations.json[0]"


def test_any_other_document_file_is_one_item() -> None:
    for name in ("openai/legacy_function_call.json", "chat_graph/seed_linear.json"):
        [item] = iter_items(fixture_path(name))

        assert item.document == load_fixture(name) and item.error == ""
        assert item.label == str(fixture_path(name))


def test_an_array_of_documents_gives_each_document(tmp_path: Path) -> None:
    export = [load_fixture("openwebui/minimal_single_item.json"), load_fixture("chat_graph/seed_linear.json")]
    path = tmp_path / "several.json"
    path.write_text(json.dumps(export))

    assert [(item.label, item.document) for item in iter_items(path)] == [
        (f"{path}[0]", export[0]),
        (f"{path}[1]", export[1]),
    ]


def test_jsonl_gives_one_item_a_line_and_an_error_for_a_broken_one(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text('{"chat_history": []}\n\n{broken\n')

    first, broken = iter_items(path)

    assert (first.label, first.document, first.error) == (f"{path}:1", {"chat_history": []}, "")
    assert broken.label == f"{path}:3" and broken.error.startswith(f"{path}:3: not valid JSON")


def test_a_folder_without_conversations_json_is_one_error(tmp_path: Path) -> None:
    [item] = iter_items(tmp_path)

    assert item.error == "a folder must be a ChatGPT export holding conversations.json"


def test_a_zip_member_over_the_size_limit_is_refused_before_it_is_decompressed(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", b"[" + b" " * 5_000_000 + b"]")  # 5 MB of spaces: a few KB compressed

    [item] = iter_items(archive, ArchiveLimits(max_member_bytes=1_000_000))

    assert item.document is None
    assert "conversations.json is 5,000,002 bytes uncompressed, over the limit of 1,000,000" in item.error
    assert archive.stat().st_size < 50_000


def test_a_zip_with_too_many_members_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", "[]")
        for number in range(20):
            zf.writestr(f"junk/{number}", "")

    [item] = iter_items(archive, ArchiveLimits(max_members=10))

    assert item.error == "not imported: the archive has 21 members, over the limit of 10"


def test_a_member_whose_header_understates_its_size_is_still_cut_at_the_limit(tmp_path: Path) -> None:
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", b"[" + b" " * 3_000 + b"]")
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("conversations.json")
    # Rewrite the sizes in both headers to claim 10 bytes.
    data = bytearray(archive.read_bytes())
    real = (info.file_size).to_bytes(4, "little")
    data = bytearray(bytes(data).replace(real, (10).to_bytes(4, "little")))
    archive.write_bytes(bytes(data))

    [item] = iter_items(archive, ArchiveLimits(max_member_bytes=1_000))

    assert item.document is None
    # zipfile reads no more than the header says, and the short read fails its CRC check: refused, not read whole.
    assert item.error.startswith("not imported: Bad CRC-32"), item.error
