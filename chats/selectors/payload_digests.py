"""The version of an artifact's payload: a digest of its canonical JSON, and the hash the database groups
injections by before the digests merge what it could not."""

from __future__ import annotations

import hashlib
import json

from django.db.models import TextField
from django.db.models.functions import MD5, Cast


def canonical_digest(payload: object) -> str:
    """The version of a payload: equal JSON values have equal digests, whatever their key order or spacing."""
    if payload is None:
        return ""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()


def payload_hash() -> MD5:
    # Grouped in the database: on PostgreSQL jsonb's text is canonical (equal values, equal text); on SQLite it is
    # the text as stored, so versions that differ only in key order are merged by canonical_digest afterwards.
    return MD5(Cast("payload", TextField()))
