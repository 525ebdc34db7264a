"""Read audit: who opened a conversation (its page, or the API's detail), by person or key, and when.

Views are not audit events (chats.services.audit): there are many more of them, they are pruned after
MASTERBRAIN_READ_AUDIT_RETENTION_DAYS, which the write log's hash chain forbids, and recording one must not wait
for the chain's lock. They go into their own table, chats.ReadEvent, which only `read_event_record`
inserts into and only `read_audit_prune` deletes from.

A conversation is read through the functions here, which record the view as they read it: `thread_open` (its page,
the review page) and `conversation_detail_open` (the API's detail). A page or an endpoint calls them, never the
selectors they wrap (tests/test_export_recording.py fails one that does), so none can forget the record.

Repeated views by the same person or key of the same conversation within MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS
count as one: the first one in the window adds a key to the cache (`cache.add` is atomic: of two requests at once,
one adds it), and only that one inserts a row. The common case, a reader moving around one thread, costs no query;
a recorded view costs exactly one INSERT. With the local-memory cache (no REDIS_URL) each process keeps its own
window, so a reader served by N processes may be recorded up to N times in one window; Redis shares it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput
from chats.models import Conversation, ReadEvent, ViewedVia
from chats.selectors.conversations import ConversationDetail, conversation_detail
from chats.selectors.exports import Branch
from chats.selectors.threads import Thread, path_window, thread_read
from chats.services.audit import Actor, audit_record, audited_write

# Views deleted per statement by the prune.
PRUNE_BATCH = 5000


class Viewer(Protocol):
    """Who reads: a user (anonymous included), or a source acting by its key (`SourcePrincipal`)."""

    @property
    def is_authenticated(self) -> bool: ...

    def get_username(self) -> str: ...


def _viewer_key(viewer: Viewer) -> str:
    """The viewer as the window's cache key names it: a person by id (a username can change), else by name."""
    if isinstance(viewer, User):
        return f"user:{viewer.pk}"
    return str(viewer.get_username())


def read_event_record(*, viewer: Viewer | None, conversation_uuid: UUID, via: ViewedVia) -> bool:
    """Record that `viewer` (a user, or a source acting by its key) opened this conversation, unless read audit is
    off or they already did within the window. Whether a row was inserted."""
    if not settings.MASTERBRAIN_READ_AUDIT or viewer is None or not viewer.is_authenticated:
        return False
    window = settings.MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS
    if not cache.add(f"read-audit:{_viewer_key(viewer)}:{conversation_uuid}", 1, timeout=window):
        return False
    ReadEvent.objects.create(
        conversation_uuid=conversation_uuid,
        viewer=viewer if isinstance(viewer, User) else None,
        viewer_name=str(viewer.get_username())[:150],
        via=via,
    )
    return True


def thread_open(
    conversation: Conversation, *, viewer: Viewer, via: ViewedVia = ViewedVia.PAGE, **window: int | None
) -> Thread:
    """A window of the thread and all shown with it (`thread_read`, with `window`'s at, after, around, limit...),
    read by `viewer`: their view recorded first."""
    read_event_record(viewer=viewer, conversation_uuid=conversation.uuid, via=via)
    return thread_read(conversation, user=viewer, **window)


def conversation_detail_open(
    conversation: Conversation, *, viewer: Viewer, branch: Branch, window: Mapping[str, int | None] | None = None
) -> ConversationDetail:
    """The API's detail of a conversation (`conversation_detail`: the whole thread, or the window of its active path
    that `window`'s after and limit give `path_window`), read by `viewer`: their view recorded first."""
    read_event_record(viewer=viewer, conversation_uuid=conversation.uuid, via=ViewedVia.API)
    return conversation_detail(
        conversation, branch=branch, window=path_window(conversation, **window) if window is not None else None
    )


@dataclass(frozen=True)
class ReadAuditPruneResult:
    cutoff: datetime
    deleted: int


@audited_write
def read_audit_prune(*, older_than_days: int, actor: Actor) -> ReadAuditPruneResult:
    """Delete the views recorded more than `older_than_days` days ago, oldest first, PRUNE_BATCH per statement (so
    that no statement holds many rows' locks at once), and record one audit event saying how many went. Views only:
    audit events are never pruned."""
    if older_than_days < 0:
        raise InvalidInput("the number of days cannot be negative")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    old = ReadEvent.objects.filter(created_at__lt=cutoff)
    deleted = 0
    since: datetime | None = None
    while True:
        # From the last batch's time on: the index need not step over the rows this transaction already deleted.
        page = old if since is None else old.filter(created_at__gte=since)
        batch = list(page.order_by("created_at").values_list("pk", "created_at")[:PRUNE_BATCH])
        if not batch:
            break
        deleted += ReadEvent.objects.filter(pk__in=[pk for pk, _ in batch]).delete()[0]
        since = batch[-1][1]
    if deleted:
        audit_record(
            actor=actor,
            action=AuditAction.READ_EVENTS_PRUNED,
            target_type="view_events",  # as the log has always stored it (AuditAction.READ_EVENTS_PRUNED)
            target_id="all",
            after={"older_than_days": older_than_days, "cutoff": cutoff.isoformat(), "deleted": deleted},
        )
    return ReadAuditPruneResult(cutoff=cutoff, deleted=deleted)
