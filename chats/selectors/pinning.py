"""Reads of what reviews judged (chats.review.pinning): the pin a lease, a review or a resolution records, the
messages of a pinned path, and whether a queue item's conversation has moved on since it was reviewed.

`items_grown_since_review(queryset)` and `with_review_pin(queryset)` work on any queryset of queue items, in the
same statement (two correlated subqueries, each reading an index): the lists filter and show by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import BooleanField, Case, F, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from chats.models import Lease, Message, QueueItem, Resolution, Review, ReviewState
from chats.review.pinning import path_sha256


@dataclass(frozen=True)
class Pin:
    """A path: its last message's key, the SHA-256 of the path (chats.review.pinning) and its messages' roles by
    key (what a per-message answer may name)."""

    leaf_key: str
    path_sha256: str
    message_roles: dict[str, str]

    def fields(self) -> dict[str, str]:
        """The columns a lease, a review, a resolution or a dataset item stores it in."""
        return {"pinned_leaf_key": self.leaf_key, "pinned_path_sha256": self.path_sha256}


def _pin_of(path: list[Message]) -> Pin:
    return Pin(
        leaf_key=path[-1].key if path else "",
        path_sha256=path_sha256(path),
        message_roles={message.key: message.role for message in path},
    )


def active_path_pin(conversation_id: int) -> Pin:
    """The conversation's active path as it is now (one query, on the active path's index)."""
    path = list(
        Message.objects.filter(conversation_id=conversation_id, on_active_path=True)
        .order_by("depth")
        .only("key", "content_key", "role")
    )
    return _pin_of(path)


def pinned_path_messages(conversation_id: int, leaf_key: str) -> list[Message]:
    """The messages from the root to the message `leaf_key` of the conversation, root first, whichever branch is
    active now (empty when the conversation has no such message). One query over the conversation's messages."""
    rows = list(
        Message.objects.filter(conversation_id=conversation_id).only("id", "parent_id", "key", "content_key", "role")
    )
    by_id = {row.pk: row for row in rows}
    current = next((row for row in rows if row.key == leaf_key), None)
    path: list[Message] = []
    while current is not None and len(path) <= len(rows):
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    path.reverse()
    return path


def pin_at(conversation_id: int, leaf_key: str) -> Pin:
    """The pin of the path that ends at `leaf_key` (the active path's when `leaf_key` is empty)."""
    if not leaf_key:
        return active_path_pin(conversation_id)
    return _pin_of(pinned_path_messages(conversation_id, leaf_key))


def review_pin(*, item: QueueItem, reviewer: User, now: datetime) -> Pin:
    """What `reviewer`'s review of `item` judges: the path of the lease they hold, else the path their draft
    pinned already, else the active path now."""
    mine = {"conversation_id": item.conversation_id, "item": item, "reviewer": reviewer}
    leased = Lease.objects.filter(**mine, expires_at__gt=now).exclude(pinned_leaf_key="")
    drafted = Review.objects.filter(**mine).exclude(pinned_leaf_key="")
    leaf_key = (
        leased.values_list("pinned_leaf_key", flat=True).first()
        or drafted.values_list("pinned_leaf_key", flat=True).first()
    )
    if leaf_key:
        return pin_at(item.conversation_id, leaf_key)
    return active_path_pin(item.conversation_id)


def resolution_pin(item: QueueItem) -> Pin:
    """What a gold answer for `item` is about: the path the latest submitted review judged, else the active
    path now."""
    leaf_key = (
        Review.objects.filter(conversation_id=item.conversation_id, item=item, state=ReviewState.SUBMITTED)
        .exclude(pinned_leaf_key="")
        .order_by("-submitted_at", "-id")
        .values_list("pinned_leaf_key", flat=True)
        .first()
    )
    return pin_at(item.conversation_id, leaf_key or "")


def with_review_pin(items: QuerySet[QueueItem]) -> QuerySet[QueueItem]:
    """Each item with `reviewed_leaf_key` (the leaf its resolution pinned, else its latest submitted review's;
    None before any) and `grown_since_review`: reviewed, and the conversation's active path no longer ends at
    that leaf (it grew, or another branch became active)."""
    resolution = Resolution.objects.filter(conversation_id=OuterRef("conversation_id"), item=OuterRef("pk"))
    latest_review = Review.objects.filter(
        conversation_id=OuterRef("conversation_id"), item=OuterRef("pk"), state=ReviewState.SUBMITTED
    ).order_by("-submitted_at", "-id")
    active_leaf = Message.objects.filter(conversation_id=OuterRef("conversation_id"), on_active_path=True).order_by(
        "-depth"
    )
    return items.annotate(
        reviewed_leaf_key=Coalesce(
            Subquery(resolution.exclude(pinned_leaf_key="").values("pinned_leaf_key")[:1]),
            Subquery(latest_review.exclude(pinned_leaf_key="").values("pinned_leaf_key")[:1]),
        ),
        current_leaf_key=Subquery(active_leaf.values("key")[:1]),
        grown_since_review=Case(
            When(reviewed_leaf_key__isnull=True, then=Value(False)),
            When(reviewed_leaf_key=F("current_leaf_key"), then=Value(False)),
            default=Value(True),
            output_field=BooleanField(),
        ),
    )


def items_grown_since_review(items: QuerySet[QueueItem]) -> QuerySet[QueueItem]:
    """The items of `items` whose conversation moved on since they were reviewed (see with_review_pin)."""
    return with_review_pin(items).filter(Q(grown_since_review=True))
