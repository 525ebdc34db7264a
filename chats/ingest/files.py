"""Reading conversation files: JSON, JSONL/NDJSON and ChatGPT exports (a folder or a .zip).

Yields one item per document with where it came from, so that callers can keep going past bad ones.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chats import strict_json


@dataclass(frozen=True)
class ArchiveLimits:
    """What a .zip may hold before it is refused unread: a ChatGPT export has a few members, and its
    conversations.json is at most a few hundred megabytes. The sizes are the members' uncompressed ones, checked
    before anything is decompressed, and again while reading (a header may lie)."""

    max_members: int = 10_000
    max_member_bytes: int = 1024 * 1024 * 1024


DEFAULT_LIMITS = ArchiveLimits()


class ArchiveTooLarge(ValueError):
    pass


def _read_member(archive: zipfile.ZipFile, name: str, limits: ArchiveLimits) -> bytes:
    info = archive.getinfo(name)
    if info.file_size > limits.max_member_bytes:
        raise ArchiveTooLarge(
            f"{name} is {info.file_size:,} bytes uncompressed, over the limit of {limits.max_member_bytes:,}"
        )
    with archive.open(info) as member:
        data = member.read(limits.max_member_bytes + 1)
    if len(data) > limits.max_member_bytes:
        raise ArchiveTooLarge(f"{name} is over the limit of {limits.max_member_bytes:,} bytes uncompressed")
    return data


@dataclass
class Item:
    label: str  # where the item came from: "file.jsonl:12"
    document: Any = None
    error: str = ""
    message_feedback: list[dict[str, Any]] | None = None


def _chatgpt_items(label: str, conversations: Any, feedback: list[dict[str, Any]]) -> Iterator[Item]:
    if not isinstance(conversations, list):
        yield Item(label, error="conversations.json is not a JSON array")
        return
    by_conversation: dict[str, list[dict[str, Any]]] = {}
    for entry in feedback:
        if isinstance(entry, dict):
            by_conversation.setdefault(str(entry.get("conversation_id")), []).append(entry)
    for index, conversation in enumerate(conversations):
        conversation_id = (
            str(conversation.get("id") or conversation.get("conversation_id")) if isinstance(conversation, dict) else ""
        )
        yield Item(f"{label}[{index}]", conversation, message_feedback=by_conversation.get(conversation_id))


def _read_json(label: str, text: str | bytes) -> tuple[Any, str]:
    try:
        return strict_json.loads(text), ""
    except (json.JSONDecodeError, UnicodeDecodeError, strict_json.NotStrictJson) as error:
        return None, f"{label}: not valid JSON: {error}"


def _read_archive(path: Path, limits: ArchiveLimits) -> tuple[Any, str, Any, str] | None:
    """conversations.json and message_feedback.json of a ChatGPT export's .zip, each read and its error; None when
    the archive holds no conversations.json."""
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if len(members) > limits.max_members:
            raise ArchiveTooLarge(f"the archive has {len(members):,} members, over the limit of {limits.max_members:,}")
        names = {Path(info.filename).name: info.filename for info in members}
        if "conversations.json" not in names:
            return None
        conversations, error = _read_json(
            f"{path}:conversations.json", _read_member(archive, names["conversations.json"], limits)
        )
        feedback: Any = []
        feedback_error = ""
        if "message_feedback.json" in names:
            feedback, feedback_error = _read_json(
                f"{path}:message_feedback.json", _read_member(archive, names["message_feedback.json"], limits)
            )
    return conversations, error, feedback, feedback_error


def iter_items(path: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> Iterator[Item]:
    if path.is_dir():
        conversations_file = path / "conversations.json"
        if not conversations_file.exists():
            yield Item(str(path), error="a folder must be a ChatGPT export holding conversations.json")
            return
        feedback_file = path / "message_feedback.json"
        conversations, error = _read_json(str(conversations_file), conversations_file.read_bytes())
        feedback, feedback_error = (
            _read_json(str(feedback_file), feedback_file.read_bytes()) if feedback_file.exists() else ([], "")
        )
        if error or feedback_error:
            yield Item(str(path), error=error or feedback_error)
            return
        yield from _chatgpt_items(str(conversations_file), conversations, feedback or [])
    elif path.suffix == ".zip":
        try:
            read = _read_archive(path, limits)
        except (zipfile.BadZipFile, ArchiveTooLarge) as problem:
            yield Item(str(path), error=f"not imported: {problem}")
            return
        if read is None:
            yield Item(str(path), error="the archive holds no conversations.json")
            return
        conversations, error, feedback, feedback_error = read
        if error or feedback_error:
            yield Item(str(path), error=error or feedback_error)
            return
        yield from _chatgpt_items(f"{path}:conversations.json", conversations, feedback or [])
    elif path.suffix in {".jsonl", ".ndjson"}:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    document, error = _read_json(f"{path}:{number}", line)
                    yield Item(f"{path}:{number}", document, error)
    else:
        document, error = _read_json(str(path), path.read_bytes())
        if error:
            yield Item(str(path), error=error)
        elif isinstance(document, list) and document and all(isinstance(d, dict) and "mapping" in d for d in document):
            yield from _chatgpt_items(str(path), document, [])  # a bare conversations.json
        elif isinstance(document, list) and document and all(isinstance(d, dict) and "role" not in d for d in document):
            for index, item in enumerate(document):  # an array of documents
                yield Item(f"{path}[{index}]", item)
        else:
            yield Item(str(path), document)
