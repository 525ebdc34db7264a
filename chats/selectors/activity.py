"""A conversation's activity, for its auditors: one timeline, newest first, of what happened to it and who read it.

- ingestions: each receipt of this conversation (outcome, format, messages added, warnings and errors, a link to
  the receipt), with the audit event it caused ("conversation.created", ".appended", ".branched", ".updated"), if any
  (a document that changed nothing leaves a receipt only);
- the audit events naming this conversation: feedback created, changed or deleted, review status changes, branch
  switches, exports of this conversation, each with its before and after as a field-by-field diff (chats.diffs);
- views of its page or of its API detail (chats.ReadEvent).

Exports of a filtered set record their filters, not the conversations they held: they are not in a conversation's
timeline (the audit log lists them). Three queries, whatever the history: the latest ACTIVITY_LIMIT of each kind,
merged here; the merged list's first ACTIVITY_LIMIT entries are then exactly the conversation's latest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse

from chats.audit_actions import INGESTION_ACTIONS, AuditAction
from chats.diffs import FieldChange, field_changes
from chats.models import AuditEvent, Conversation, IngestionReceipt, ReadEvent

ACTIVITY_LIMIT = 100

# How each kind of entry is named on the page.
ACTION_WORDS: dict[str, str] = {
    AuditAction.CONVERSATION_CREATED: "Created by an ingestion",
    AuditAction.CONVERSATION_APPENDED: "Messages appended by an ingestion",
    AuditAction.CONVERSATION_BRANCHED: "A branch added by an ingestion",
    AuditAction.CONVERSATION_UPDATED: "Updated by an ingestion",
    AuditAction.CONVERSATION_STATUS_CHANGED: "Review status changed",
    AuditAction.CONVERSATION_BRANCH_SWITCHED: "Active branch switched",
    AuditAction.CONVERSATION_EXPORTED: "Exported",
    AuditAction.FEEDBACK_CREATED: "Feedback given",
    AuditAction.FEEDBACK_UPDATED: "Feedback changed",
    AuditAction.FEEDBACK_DELETED: "Feedback deleted",
}
KINDS: dict[str, str] = {
    AuditAction.CONVERSATION_STATUS_CHANGED: "status",
    AuditAction.CONVERSATION_BRANCH_SWITCHED: "branch",
    AuditAction.CONVERSATION_BRANCHED: "branch",
    AuditAction.CONVERSATION_EXPORTED: "export",
    AuditAction.FEEDBACK_CREATED: "feedback",
    AuditAction.FEEDBACK_UPDATED: "feedback",
    AuditAction.FEEDBACK_DELETED: "feedback",
}


@dataclass(frozen=True)
class ReceiptNote:
    uuid: str
    url: str
    outcome: str
    input_format: str
    messages_added: int
    warnings: int
    errors: int


@dataclass(frozen=True)
class ActivityEntry:
    at: datetime
    kind: str  # "ingestion", "branch", "feedback", "status", "export", "view", or "other"
    action: str  # the audit event's action, "ingestion.<outcome>" for a receipt alone, or "viewed"
    title: str
    actor: str  # a username, "source:<name>", "command:<name> (account)", or "" for the system
    via: str = ""  # a view's: "page" or "api"
    receipt: ReceiptNote | None = None
    changes: list[FieldChange] = field(default_factory=list)
    export: dict[str, Any] | None = None  # an export's format, filters and count


@dataclass(frozen=True)
class Activity:
    entries: list[ActivityEntry]
    limit: int
    truncated: bool  # there is older activity than the entries shown


def _receipt_note(uuid: object, row: Mapping[str, Any] | None) -> ReceiptNote:
    url = reverse("api:receipt", args=[uuid])
    if row is None:  # older than the receipts read: the link still leads to it
        return ReceiptNote(str(uuid), url, "", "", 0, 0, 0)
    return ReceiptNote(
        uuid=str(uuid),
        url=url,
        outcome=row["outcome"],
        input_format=row["input_format"],
        messages_added=row["messages_added"],
        warnings=len(row["warnings"] or []),
        errors=len(row["errors"] or []),
    )


def activity_read(conversation: Conversation, *, limit: int = ACTIVITY_LIMIT) -> Activity:
    """The conversation's latest `limit` entries, newest first. Three queries."""
    events = list(
        AuditEvent.objects.filter(conversation_uuid=conversation.uuid)
        .order_by("-created_at", "-id")
        .values("id", "action", "actor_username", "before", "after", "created_at")[: limit + 1]
    )
    receipts = list(
        IngestionReceipt.objects.filter(conversation=conversation)
        .order_by("-created_at", "-id")
        .values(
            "uuid", "source__name", "outcome", "input_format", "messages_added", "warnings", "errors", "created_at"
        )[: limit + 1]
    )
    views = list(
        ReadEvent.objects.filter(conversation_uuid=conversation.uuid)
        .order_by("-created_at", "-id")
        .values("viewer_name", "via", "created_at")[: limit + 1]
    )
    more = len(events) > limit or len(receipts) > limit or len(views) > limit
    events, receipts, views = events[:limit], receipts[:limit], views[:limit]

    receipt_rows = {str(row["uuid"]): row for row in receipts}
    caused: set[str] = set()  # receipts shown with the event they caused
    entries: list[ActivityEntry] = []
    for event in events:
        action = event["action"]
        after = event["after"] if isinstance(event["after"], dict) else {}
        receipt = None
        if action in INGESTION_ACTIONS and after.get("receipt"):
            receipt = _receipt_note(after["receipt"], receipt_rows.get(after["receipt"]))
            caused.add(receipt.uuid)
        export = None
        changes: list[FieldChange] = []
        if action == AuditAction.CONVERSATION_EXPORTED:
            export = {"format": after.get("format"), "filters": after.get("filters"), "count": after.get("count")}
        else:
            changes = field_changes(event["before"], event["after"])
        entries.append(
            ActivityEntry(
                at=event["created_at"],
                kind=KINDS.get(action, "ingestion" if action in INGESTION_ACTIONS else "other"),
                action=action,
                title=ACTION_WORDS.get(action, action),
                actor=event["actor_username"],
                receipt=receipt,
                changes=changes,
                export=export,
            )
        )
    for uuid, row in receipt_rows.items():
        if uuid in caused:
            continue
        entries.append(
            ActivityEntry(
                at=row["created_at"],
                kind="ingestion",
                action=f"ingestion.{row['outcome']}",
                title=f"Ingestion: {row['outcome']}",
                actor=f"source:{row['source__name']}",
                receipt=_receipt_note(uuid, row),
            )
        )
    for view in views:
        entries.append(
            ActivityEntry(
                at=view["created_at"],
                kind="view",
                action="viewed",
                title="Viewed through the API" if view["via"] == "api" else "Viewed",
                actor=view["viewer_name"],
                via=view["via"],
            )
        )
    # Newest first; at the same instant, a view before what it led to is the likelier story.
    entries.sort(key=lambda entry: (entry.at, entry.kind != "view"), reverse=True)
    return Activity(entries=entries[:limit], limit=limit, truncated=more or len(entries) > limit)
