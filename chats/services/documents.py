"""The first step of every ingestion path: one document checked and parsed, before any database work.

What cannot be stored is refused here with its JSON path (a NUL character, an unpaired surrogate), and so is a
document over a per-conversation limit; otherwise the document is parsed by `chats.ingest` and its messages are
given their content keys, which the planner matches on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from chats import ingest, storable
from chats.formats import canonical as c
from chats.ingest import identity
from chats.ingest.chatgpt_export import apply_message_feedback
from chats.models import IngestionReceipt


@dataclass
class Prepared:
    """One document, checked and parsed: what every ingestion path plans from."""

    document: Any
    content: bytes  # the bytes the document arrived as (its canonical JSON when it came as a value): the payload
    digest: str  # SHA-256 of `content`
    format: str  # the parsed format, else the one the client named ("" when none)
    parsed: c.Conversation | None = None  # None: refused, for `errors`
    errors: list[c.Issue] = field(default_factory=list)
    over_limit: bool = False
    external_id: str | None = None  # the document's own id, else the client's
    # The receipt already stored for it, still `queued` (an asynchronous bulk ingest): the writers give it the
    # outcome, where otherwise they create one.
    queued: IngestionReceipt | None = None

    @property
    def size_bytes(self) -> int:
        return len(self.content)


def document_prepare(
    *,
    document: object,
    format: str | None = None,
    external_id: str | None = None,
    content: bytes | None = None,
    message_feedback: list[dict[str, Any]] | None = None,
    queued: IngestionReceipt | None = None,
) -> Prepared:
    """Check and parse one document (no database work): what cannot be stored is refused here, with its path.

    `content` is the bytes the document was decoded from (a request's body, a bulk body's item or line), kept
    exactly as its receipt's payload; a document given as a value (a file's import, the demo data) is kept as
    its canonical JSON. `queued`: its receipt, when one was stored before (see `Prepared.queued`).
    """
    text = c.canonical_json(document)
    encoded, _ = _encode(text)
    if content is None:
        content = encoded
    prepared = Prepared(
        document=document,
        content=content,
        digest=hashlib.sha256(content).hexdigest(),
        format=format or "",
        external_id=external_id or None,
        queued=queued,
    )
    found = storable.unstorable(document)
    if found is not None:
        # PostgreSQL stores neither NUL nor a lone surrogate in text or JSON; refuse rather than alter what was sent
        # (the receipt keeps the bytes).
        prepared.errors = [c.Issue(found.pointer, found.reason)]
        return prepared
    try:
        parsed = ingest.parse_document(document, format=format)
    except c.ParseError as error:
        prepared.errors = error.errors
        return prepared
    over = _over_limit(parsed)
    if over is not None:
        prepared.errors, prepared.over_limit = [over], True
        return prepared
    if message_feedback:
        # A ChatGPT export's message_feedback.json: thumbs on the messages it names.
        parsed.warnings.extend(apply_message_feedback([parsed], message_feedback))
    identity.assign_content_keys(parsed)
    prepared.parsed, prepared.format = parsed, parsed.format
    prepared.external_id = parsed.external_id or prepared.external_id
    return prepared


def document_content(document: object) -> bytes:
    """The bytes a document given as a value is kept as: its canonical JSON."""
    return _encode(c.canonical_json(document))[0]


def _encode(text: str) -> tuple[bytes, bool]:
    """The text as UTF-8, and whether it holds an unpaired surrogate (then encoded as one)."""
    try:
        return text.encode(), False
    except UnicodeEncodeError:
        # json.loads accepts an unpaired surrogate escape ("\ud800"); no UTF-8 text can hold one.
        return text.encode(errors="surrogatepass"), True


def _over_limit(parsed: c.Conversation) -> c.Issue | None:
    """The first per-conversation limit the parsed document exceeds (HTTP 413), if any."""
    counts = (
        (len(parsed.messages), settings.MASTERBRAIN_MAX_MESSAGES, "messages"),
        (sum(len(m.tool_calls) for m in parsed.messages), settings.MASTERBRAIN_MAX_TOOL_CALLS, "tool calls"),
        (len(parsed.artifacts), settings.MASTERBRAIN_MAX_ARTIFACTS, "injected artifacts"),
    )
    for count, limit, what in counts:
        if count > limit:
            return c.Issue("", f"{count} {what}: at most {limit} per conversation.")
    return None
