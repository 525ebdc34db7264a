"""Differences between two values, for people to read: a line diff of two texts (or of two JSON values
pretty-printed), and a field-by-field diff of two JSON objects (an audit event's before and after), where long
texts are diffed by line.

Pure functions over plain values: the artifact pages, the audit pages, the conversation's activity and the admin
all show differences through them.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MAX_DIFF_LINES = 4000  # per side: a longer text is diffed up to here, and says so
MAX_FIELD_DEPTH = 4  # nested objects are compared key by key down to here, then as whole values
LONG_TEXT_CHARS = 120  # a changed text longer than this (or with a line break) is shown as a line diff


@dataclass(frozen=True, slots=True)
class DiffLine:
    sign: str  # "+" added, "-" removed, " " the same, "@" a hunk header
    text: str


@dataclass(frozen=True, slots=True)
class LineDiff:
    lines: list[DiffLine]
    truncated: bool  # a side had more than MAX_DIFF_LINES lines: only the first ones were compared


def line_diff(old: Sequence[str], new: Sequence[str], *, context: int = 3) -> LineDiff:
    """A unified diff of two lists of lines, without its ---/+++ header (the page names both sides)."""
    truncated = len(old) > MAX_DIFF_LINES or len(new) > MAX_DIFF_LINES
    diff = difflib.unified_diff(list(old[:MAX_DIFF_LINES]), list(new[:MAX_DIFF_LINES]), lineterm="", n=context)
    lines = []
    for line in itertools.islice(diff, 2, None):
        sign = "@" if line.startswith("@@") else line[:1] or " "
        lines.append(DiffLine(sign, line if sign == "@" else line[1:]))
    return LineDiff(lines=lines, truncated=truncated)


def pretty_json(value: object) -> str:
    """Indented with sorted keys, one value per line, for a line diff; a value nested too deep for Python's
    indenting encoder (ingest stores whatever the C decoder reads) is compared as one compact line."""
    try:
        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
    except RecursionError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_line_diff(old: object, new: object) -> LineDiff:
    """A line diff of two JSON values pretty-printed (sorted keys, so that only real changes show)."""
    return line_diff(pretty_json(old).splitlines(), pretty_json(new).splitlines())


class Change(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class FieldChange:
    path: str  # "score", "labels", "metadata.reason": dotted through nested objects
    change: Change
    old: Any = None
    new: Any = None
    text_diff: LineDiff | None = field(default=None)  # both sides long texts: their line diff

    @property
    def old_text(self) -> str:
        return shown(self.old)

    @property
    def new_text(self) -> str:
        return shown(self.new)


def shown(value: object) -> str:
    """A value as a reader sees it in a diff: texts as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _is_long_text(value: object) -> bool:
    return isinstance(value, str) and (len(value) > LONG_TEXT_CHARS or "\n" in value)


def _walk(before: Mapping[str, object], after: Mapping[str, object], prefix: str, depth: int) -> Iterator[FieldChange]:
    for key in sorted(before.keys() | after.keys(), key=str):
        path = f"{prefix}{key}"
        if key not in after:
            yield FieldChange(path, Change.REMOVED, old=before[key])
            continue
        if key not in before:
            yield FieldChange(path, Change.ADDED, new=after[key])
            continue
        old, new = before[key], after[key]
        if old == new and type(old) is type(new):
            continue
        if isinstance(old, dict) and isinstance(new, dict) and depth < MAX_FIELD_DEPTH:
            yield from _walk(old, new, f"{path}.", depth + 1)
        elif _is_long_text(old) or _is_long_text(new):
            text_diff = line_diff(str(old).splitlines(), str(new).splitlines()) if isinstance(old, str) else None
            yield FieldChange(path, Change.CHANGED, old=old, new=new, text_diff=text_diff)
        else:
            yield FieldChange(path, Change.CHANGED, old=old, new=new)


def field_changes(before: object, after: object) -> list[FieldChange]:
    """What changed from ``before`` to ``after``, field by field: added, removed and changed values, nested objects
    key by key (dotted paths), long texts with their line diff. A side that is not an object (None for a row
    created or deleted, or any other JSON value) is compared as one value named "value", unless it is None."""
    old: Mapping[str, object] = before if isinstance(before, dict) else ({} if before is None else {"value": before})
    new: Mapping[str, object] = after if isinstance(after, dict) else ({} if after is None else {"value": after})
    return list(_walk(old, new, "", 1))
