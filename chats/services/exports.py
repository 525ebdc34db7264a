"""Exports are recorded: who took which conversations out, in which format, with which filters.

Every export a person, a key or a command takes goes through one of the functions here, which records the event
("conversation.exported") and hands back what is sent; a page, an endpoint or a command streams what they return
and records nothing itself. A new export adds its function here (tests/test_export_recording.py fails a module
outside this one that streams an export itself). An export job is recorded when its result is downloaded
(`export_job_download_record`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from chats.audit_actions import AuditAction
from chats.export import ExportResult, export_conversation
from chats.models import Conversation, Dataset
from chats.selectors.artifact_export import artifact_lines
from chats.selectors.artifacts import ArtifactFilters, artifact_count
from chats.selectors.datasets import dataset_lines
from chats.selectors.exports import BulkExport, conversation_to_canonical, export_lines
from chats.services.audit import Actor, audit_record


def export_record(
    *,
    actor: Actor,
    what: str,
    format: str,
    filters: dict[str, Any],
    count: int | None = None,
    conversation_uuid: str | uuid.UUID | None = None,
) -> None:
    audit_record(
        actor=actor,
        action=AuditAction.CONVERSATION_EXPORTED,
        target_type=what,
        target_id=str(conversation_uuid or "filtered"),
        conversation_uuid=conversation_uuid,
        after={"format": format, "filters": filters, "count": count},
    )


def conversation_export(*, actor: Actor, conversation: Conversation, format: str) -> ExportResult:
    """One conversation, every branch, as a document of `format`; recorded with the conversation."""
    result = export_conversation(conversation_to_canonical(conversation, branch="all"), format)
    export_record(
        actor=actor, what="conversation", format=format, filters={}, count=1, conversation_uuid=conversation.uuid
    )
    return result


def bulk_export_stream(*, actor: Actor, export: BulkExport) -> Iterator[bytes]:
    """A bulk export's bytes (its filters must be valid), recorded with its filters and how many it holds."""
    export_record(
        actor=actor,
        what="conversations",
        format=export.format,
        filters=export.filterset.given_filters(),
        count=export.queryset().count(),
    )
    return export.chunks()


def conversations_export_stream(
    *,
    actor: Actor,
    queryset: QuerySet[Conversation],
    format: str,
    filters: dict[str, Any],
    count: int,
    envelope: bool = False,
) -> Iterator[bytes]:
    """`queryset`'s conversations as NDJSON (a command's export: it counted them), recorded with `filters`."""
    export_record(actor=actor, what="conversations", format=format, filters=filters, count=count)
    return export_lines(queryset, format, envelope=envelope)


def artifacts_export_stream(*, actor: Actor, filters: ArtifactFilters, given: dict[str, Any]) -> Iterator[str]:
    """The artifacts' NDJSON, recorded with the filters the caller gave (`given`) and how many there are."""
    export_record(actor=actor, what="artifacts", format="ndjson", filters=given, count=artifact_count(filters))
    return artifact_lines(filters)


def dataset_export_stream(*, actor: Actor, dataset: Dataset, format: str) -> Iterator[bytes]:
    """A dataset's lines as published, checked against its SHA-256 before anything is recorded or sent."""
    lines = dataset_lines(dataset, format)
    export_record(
        actor=actor,
        what="dataset",
        format=format,
        filters={"dataset": dataset.pk, "name": dataset.name},
        count=dataset.item_count,
    )
    return lines
