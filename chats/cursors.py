"""The one cursor codec: every paginated list (the API's and the pages') hands out and reads cursors here.

A cursor is a JSON list of the position's values (a row's sort key, and for DRF's lists the offset and the
direction), signed with the site's secret key (`django.core.signing`, salted per list) and URL-safe. A cursor is
opaque to clients: one this site did not give out, or gave out for another list, is refused before any of its
values is read (`decode` answers None, `require` raises `InvalidInput` naming the parameter), so a tampered cursor
can never reach a query. The values a valid signature vouches for are checked again by type (`row_id`, `moment`):
rotating the secret key or a changed sort order must not turn an old cursor into a 500 either.
"""

from __future__ import annotations

import datetime as dt

from django.core import signing

from chats.errors import InvalidInput
from chats.integers import parse_int
from chats.json_types import JSONArray

# A real cursor is under 200 characters; anything much longer is not one of ours and is refused unread.
MAX_CURSOR_CHARS = 512
NOT_A_CURSOR = "not a cursor this API gave out"
# Row ids are bigints: a cursor naming one outside their range names no row.
MAX_ID = 2**63 - 1


def _signer(kind: str) -> signing.Signer:
    # "." rather than signing's ":" between the value and its signature: a cursor is then URL-safe as it is.
    return signing.Signer(salt=f"chats.cursors.{kind}", sep=".")


def encode(kind: str, values: JSONArray) -> str:
    """A signed cursor for the list ``kind`` holding ``values`` (JSON scalars)."""
    return _signer(kind).sign_object(values)


def decode(text: object, kind: str) -> JSONArray | None:
    """The values of a cursor `encode` gave out for ``kind``; None for anything else (not a string, too long, not
    ASCII, a bad signature, not a list)."""
    if not isinstance(text, str) or not text or len(text) > MAX_CURSOR_CHARS or not text.isascii():
        return None
    try:
        values = _signer(kind).unsign_object(text)
    except (signing.BadSignature, ValueError, UnicodeError):  # binascii.Error and JSON errors are ValueErrors
        return None
    return values if isinstance(values, list) else None


def require(text: object, kind: str, *, name: str = "cursor") -> JSONArray:
    """`decode`, raising `InvalidInput` that names the query parameter."""
    values = decode(text, kind)
    if values is None:
        raise InvalidInput([{"path": f"/{name}", "message": NOT_A_CURSOR}])
    return values


def row_id(value: object) -> int | None:
    """A row id from a cursor: an integer (or ASCII digits) inside a bigint's positive range."""
    return parse_int(value, minimum=1, maximum=MAX_ID)


def moment(value: object) -> dt.datetime | None:
    """An instant from a cursor: an ISO 8601 text with an offset, that is a real instant in UTC."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
        return parsed.astimezone(dt.UTC) if parsed.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None
