"""Receipts: every document sent leaves one, stored or refused, saying what became of it and why."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chats.ingest import canonical as c
from chats.models import ApiKey, IngestionReceipt, Outcome, Source
from chats.services.audit import Actor
from chats.services.documents import Prepared


@dataclass(frozen=True)
class Sender:
    """Who sends a document: the source it is stored under, the key it came with, and who acts when that is not
    the source itself by its key (a command importing files)."""

    source: Source
    api_key: ApiKey | None = None
    actor: Actor = None


@dataclass(frozen=True)
class Decision:
    """What became of a document, as its receipt records it."""

    outcome: str
    conversation_id: int | None = None
    external_id: str | None = None  # the conversation's id, when the document was placed in one
    messages_added: int = 0
    warnings: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


def receipt_values(sender: Sender, prepared: Prepared, decision: Decision) -> dict[str, Any]:
    """The columns of a document's receipt (both writers)."""
    return {
        "source_id": sender.source.pk,
        "api_key_id": sender.api_key.pk if sender.api_key else None,
        "conversation_id": decision.conversation_id,
        "external_id": decision.external_id if decision.external_id is not None else prepared.external_id or "",
        # A format the client named that is not one: kept as far as the column holds (the errors say which).
        "input_format": prepared.format[:20],
        "outcome": decision.outcome,
        "payload": None if prepared.payload_text else prepared.document,
        "payload_text": prepared.payload_text,
        "payload_sha256": prepared.digest,
        "size_bytes": prepared.size_bytes,
        "messages_added": decision.messages_added,
        "warnings": decision.warnings,
        "errors": decision.errors,
    }


def receipt_create(sender: Sender, prepared: Prepared, decision: Decision) -> IngestionReceipt:
    return IngestionReceipt.objects.create(**receipt_values(sender, prepared, decision))


def receipt_reject_raw(
    *, source: Source, api_key: ApiKey | None, body: bytes, errors: Sequence[c.Issue]
) -> IngestionReceipt:
    """A receipt for a body that could not even be decoded, kept as text so that nothing is lost."""
    return IngestionReceipt.objects.create(
        source=source,
        api_key=api_key,
        outcome=Outcome.REJECTED,
        payload=None,
        # The hash is of the exact bytes; the text keeps them readable (PostgreSQL text cannot hold NUL).
        payload_text=body.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00"),
        payload_sha256=hashlib.sha256(body).hexdigest(),
        size_bytes=len(body),
        errors=[e.as_dict() for e in errors],
    )
