"""Every export and every read of a conversation is recorded where it is produced: only chats/services/exports.py
turns stored conversations, artifacts or datasets into what is sent, and only chats/services/reads.py reads a
conversation's thread or detail for a person; each records the event as it does. A page, an endpoint or a command
that did either itself could forget the record; this scan fails it (the events themselves are checked by the write
paths of tests/services/test_export_jobs_audit.py, tests/services/test_reads_audit.py and their neighbours)."""

from __future__ import annotations

import ast
from pathlib import Path

CHATS = Path(__file__).resolve().parent.parent / "chats"

# What produces an export's content or a conversation's reading, or records one, by the one module that calls it
# (and records as it does), and the places below, each for a reason.
EXPORTS, READS = "chats/services/exports.py", "chats/services/reads.py"
PRODUCERS = {
    "export_record": EXPORTS,
    "export_conversation": EXPORTS,
    "export_lines": EXPORTS,
    "artifact_lines": EXPORTS,
    "dataset_lines": EXPORTS,
    "chunks": EXPORTS,
    "thread_read": READS,
    "conversation_detail": READS,
    "read_event_record": READS,
}
ALLOWED = {
    # Where they are defined, and build on one another.
    ("chats/selectors/exports.py", "export_conversation"),
    ("chats/selectors/exports.py", "export_lines"),
    # Freezing a dataset stores each conversation's document; nothing leaves.
    ("chats/services/datasets.py", "export_conversation"),
    # An export job writes its result to storage; its download is recorded (export_job_download_record).
    ("chats/services/export_jobs.py", "chunks"),
    ("chats/services/export_jobs.py", "export_record"),
}


def _called(node: ast.Call) -> str:
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else ""


def produced_outside_their_service(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root.parent).as_posix()
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Call) or (name := _called(node)) not in PRODUCERS:
                continue
            if module != PRODUCERS[name] and (module, name) not in ALLOWED:
                found.append(f"{module}:{node.lineno} calls {name}")
    return found


def test_no_page_endpoint_or_command_produces_an_export_or_a_reading_itself() -> None:
    assert produced_outside_their_service(CHATS) == []


def test_the_scan_finds_a_view_that_streams_an_export_itself(tmp_path: Path) -> None:
    view = tmp_path / "chats" / "api" / "views.py"
    view.parent.mkdir(parents=True)
    view.write_text("def get(request):\n    return StreamingHttpResponse(export.chunks())\n")
    assert produced_outside_their_service(tmp_path / "chats") == ["chats/api/views.py:2 calls chunks"]


def test_the_scan_finds_a_page_that_reads_a_thread_itself(tmp_path: Path) -> None:
    view = tmp_path / "chats" / "views" / "threads.py"
    view.parent.mkdir(parents=True)
    view.write_text("def thread(request, uuid):\n    data = thread_read(conversation, user=request.user)\n")
    assert produced_outside_their_service(tmp_path / "chats") == ["chats/views/threads.py:2 calls thread_read"]
