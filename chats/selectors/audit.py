"""The audit log's reads that the pages share: when its hash chain was last verified, and with what outcome; a page
of events with their links and what changed (the audit pages and the admin); the rows of its export."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.urls import reverse

from chats.diffs import FieldChange, field_changes
from chats.integers import parse_int
from chats.models import AUDIT_EVENT_CONTENT, AUDIT_VERIFIED_ACTION, AuditEvent, Message, Source


@dataclass(frozen=True)
class ChainVerification:
    verified_at: datetime
    by: str
    ok: bool
    events_checked: int
    broken_id: int | None
    problem: str


def audit_chain_last_verification() -> ChainVerification | None:
    """The last run of verify_audit (one query, on a partial index), or None when it never ran."""
    event = (
        AuditEvent.objects.filter(action=AUDIT_VERIFIED_ACTION)
        .order_by("-id")
        .only("created_at", "actor_username", "after")
        .first()
    )
    if event is None:
        return None
    outcome = event.after or {}
    return ChainVerification(
        verified_at=event.created_at,
        by=event.actor_username,
        ok=bool(outcome.get("ok")),
        events_checked=int(outcome.get("events_checked") or 0),
        broken_id=outcome.get("broken_id"),
        problem=str(outcome.get("problem") or ""),
    )


# --------------------------------------------------------------------------------------------------------------
# The audit pages: a page of events with their links and the summary of what changed, one event, the export


AUDIT_PAGE_SIZE = 50
SUMMARY_FIELDS = 6  # changed fields named in a list row; the rest are counted


@dataclass(frozen=True, slots=True)
class Link:
    """Something an event names, as a reader follows it: a URL, or only its text when there is nowhere to go (or
    the reader may not go there)."""

    text: str
    url: str | None = None


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent
    actor: Link
    target: Link
    receipt: Link | None  # the ingestion receipt that caused the event
    conversation: Link | None  # the conversation the event is about, when it is not the target itself
    changes: list[FieldChange]

    @property
    def summary(self) -> str:
        """The changed fields in a few words: "score changed, comment changed, labels added"."""
        if not self.changes:
            return ""
        named = [f"{change.path} {change.change}" for change in self.changes[:SUMMARY_FIELDS]]
        rest = len(self.changes) - SUMMARY_FIELDS
        return ", ".join(named) + (f" and {rest} more" if rest > 0 else "")


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    next_cursor: int | None  # older events: ?after=
    previous_cursor: int | None  # newer events: ?before=


def audit_page(
    queryset: QuerySet[AuditEvent],
    *,
    after: int | None = None,
    before: int | None = None,
    staff: bool = False,
    size: int = AUDIT_PAGE_SIZE,
) -> AuditPage:
    """One page of ``queryset`` newest first, by id (the chain's order: one sequence, so no ties), in one query for
    the events and at most two for their links (`audit_rows`), however deep the page.

    ``after``: the events older than that id (the next page); ``before``: those newer than it (the previous one).
    """
    if before is not None and after is None:
        events = list(queryset.filter(id__gt=before).order_by("id")[: size + 1])
        has_newer = len(events) > size
        events = events[:size][::-1]
        return AuditPage(
            rows=audit_rows(events, staff=staff),
            next_cursor=events[-1].pk if events else None,
            previous_cursor=events[0].pk if events and has_newer else None,
        )
    older = queryset.filter(id__lt=after) if after is not None else queryset
    events = list(older.order_by("-id")[: size + 1])
    has_older = len(events) > size
    events = events[:size]
    return AuditPage(
        rows=audit_rows(events, staff=staff),
        next_cursor=events[-1].pk if events and has_older else None,
        previous_cursor=events[0].pk if events and after is not None else None,
    )


def _uuid_or_none(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _feedback_message_key(event: AuditEvent) -> str | None:
    for side in (event.after, event.before):
        if isinstance(side, dict) and side.get("message"):
            return str(side["message"])
    return None


def _receipt_link(event: AuditEvent) -> Link | None:
    """Ingestion events name the receipt of the document that caused them in ``after["receipt"]``
    (chats.services.ingestion.ingest_event, for the row-by-row and the bulk writers alike)."""
    value = event.after.get("receipt") if isinstance(event.after, dict) else None
    receipt = _uuid_or_none(value) if value else None
    if receipt is None:
        return None
    return Link(f"receipt {str(receipt)[:8]}", reverse("api:receipt", args=[receipt]))


def _admin_link(text: str, viewname: str, pk: object, staff: bool) -> Link:
    key = parse_int(pk if isinstance(pk, int) else str(pk), minimum=1)
    if not staff or key is None:
        return Link(text)
    return Link(text, reverse(viewname, args=[key]))


def audit_rows(events: list[AuditEvent], *, staff: bool) -> list[AuditRow]:
    """The events with their links: the actor (a person: their admin page for staff, else the name; a source's
    key: the source, its admin page for staff, else its conversations), the target (a conversation's thread; a
    feedback's thread at its message; a key, source, label or user: its admin page for staff), the receipt that
    caused it, and the changed fields. At most two queries, whatever the number of events: the feedback's
    messages (for the anchors) and, for staff, the sources named by keys."""
    message_keys = {
        (event.conversation_uuid, key)
        for event in events
        if event.target_type == "feedback" and event.conversation_uuid and (key := _feedback_message_key(event))
    }
    anchors: dict[tuple[uuid.UUID, str], int] = {}
    if message_keys:
        found = Message.objects.filter(
            conversation__uuid__in={conversation for conversation, _ in message_keys},
            key__in={key for _, key in message_keys},
        ).values_list("conversation__uuid", "key", "pk")
        anchors = {(conversation, key): pk for conversation, key, pk in found}
    source_names = {
        event.actor_username.removeprefix("source:")
        for event in events
        if event.actor_id is None and event.actor_username.startswith("source:")
    }
    sources: dict[str, int] = {}
    if staff and source_names:
        sources = dict(Source.objects.filter(name__in=source_names).values_list("name", "pk"))

    rows = []
    for event in events:
        conversation = event.conversation_uuid
        target = _target_link(event, anchors, staff)
        rows.append(
            AuditRow(
                event=event,
                actor=_actor_link(event, sources, staff),
                target=target,
                receipt=_receipt_link(event),
                conversation=(
                    Link(f"conversation {str(conversation)[:8]}", reverse("chats:thread", args=[conversation]))
                    if conversation is not None and event.target_type not in ("conversation", "feedback")
                    else None
                ),
                changes=field_changes(event.before, event.after),
            )
        )
    return rows


def _actor_link(event: AuditEvent, sources: dict[str, int], staff: bool) -> Link:
    name = event.actor_username or "system"
    if event.actor_id is not None:
        return _admin_link(name, "admin:auth_user_change", event.actor_id, staff)
    if name.startswith("source:"):
        source = name.removeprefix("source:")
        if staff and source in sources:
            return Link(name, reverse("admin:chats_source_change", args=[sources[source]]))
        return Link(name, reverse("chats:conversation_list") + "?" + urlencode({"source": source}))
    return Link(name)


def _target_link(event: AuditEvent, anchors: dict[tuple[uuid.UUID, str], int], staff: bool) -> Link:
    kind, pk = event.target_type, event.target_id
    text = f"{kind} {pk}"
    if kind == "conversation" and (conversation := _uuid_or_none(pk)) is not None:
        return Link(f"conversation {str(conversation)[:8]}", reverse("chats:thread", args=[conversation]))
    if kind == "feedback" and event.conversation_uuid is not None:
        key = _feedback_message_key(event)
        message = anchors.get((event.conversation_uuid, key)) if key else None
        anchor = f"m-{message}" if message is not None else "conversation-feedback"
        where = "on a message" if key else "on the conversation"
        url = reverse("chats:thread", args=[event.conversation_uuid]) + f"#{anchor}"
        return Link(f"feedback {pk[:8]} {where}", url)
    if kind == "receipt" and (receipt := _uuid_or_none(pk)) is not None:
        return Link(f"receipt {str(receipt)[:8]}", reverse("api:receipt", args=[receipt]))
    admin_views = {
        "api_key": "admin:chats_apikey_change",
        "source": "admin:chats_source_change",
        "label": "admin:chats_label_change",
        "user": "admin:auth_user_change",
    }
    if kind in admin_views:
        return _admin_link(text, admin_views[kind], pk, staff)
    return Link(text)


def audit_event_read(pk: int, *, staff: bool) -> AuditRow | None:
    """One event with its links and its diff, or None."""
    event = AuditEvent.objects.filter(pk=pk).first()
    if event is None:
        return None
    return audit_rows([event], staff=staff)[0]


# --------------------------------------------------------------------------------------------------------------
# The export


EXPORT_CHUNK = 2000
EXPORT_FIELDS = ("id", "created_at", *AUDIT_EVENT_CONTENT, "prev_hash", "event_hash")
# A spreadsheet reads a cell that begins with one of these as a formula (OWASP, "CSV Injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def audit_export_rows(queryset: QuerySet[AuditEvent], *, up_to: int | None) -> Iterator[dict[str, Any]]:
    """The events of ``queryset`` in chain order (oldest first), up to the id ``up_to`` (the last event when the
    export began, so that it does not list itself), read EXPORT_CHUNK at a time: a constant amount of memory."""
    bounded = queryset.filter(id__lte=up_to) if up_to is not None else queryset.none()
    rows = bounded.order_by("id").values_list(*EXPORT_FIELDS)
    for row in rows.iterator(chunk_size=EXPORT_CHUNK):
        values = dict(zip(EXPORT_FIELDS, row, strict=True))
        values["created_at"] = values["created_at"].isoformat()
        if values["conversation_uuid"] is not None:
            values["conversation_uuid"] = str(values["conversation_uuid"])
        yield values


def csv_cell(value: object) -> str:
    """A value as a CSV cell that a spreadsheet shows as text: JSON for objects, and a leading single quote on a
    text a spreadsheet would run as a formula."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return f"'{text}" if text.startswith(FORMULA_TRIGGERS) else text
