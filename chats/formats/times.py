"""Timestamps as the formats write them: ISO 8601 text (with an offset, or naive) or epoch seconds.

The parsers read them into aware UTC datetimes; the exporters read an input's own text again to tell whether it
still names the stored instant.
"""

from __future__ import annotations

from datetime import UTC, datetime

from chats.formats.canonical import Issues


def parse_timestamp(value: object, path: str, issues: Issues) -> datetime | None:
    """An aware UTC datetime from ISO 8601 text, epoch seconds (number or numeric string), or None.

    Naive ISO text is read as UTC with a warning (some producers write local time without an offset). A value
    that is none of these gives a warning and None: a bad timestamp never rejects a conversation.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    if isinstance(value, int | float):
        return _from_epoch(value, path, issues)
    if not isinstance(value, str):
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    text = value.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return _from_epoch(number, path, issues)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        issues.warn(path, f"not a timestamp: {value!r}")
        return None
    if moment.tzinfo is None:
        issues.warn(path, f"timestamp {value!r} has no UTC offset; read as UTC")
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before the first representable UTC moment
        issues.warn(path, f"timestamp out of range: {value!r}")
        return None


def _from_epoch(seconds: float, path: str, issues: Issues) -> datetime | None:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        issues.warn(path, f"epoch timestamp out of range: {seconds!r}")
        return None
