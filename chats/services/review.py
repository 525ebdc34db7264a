"""Reviewing: a conversation's review status (unreviewed, in review, reviewed, flagged), set by reviewers; and team
review queues (queues and their versioned rubrics, items, leases, reviews, resolutions). Every write is audited."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput, NotAllowed
from chats.json_types import JSONObject
from chats.models import (
    MAX_LEASE_MINUTES,
    MAX_REVIEWS_PER_ITEM,
    Conversation,
    Lease,
    Queue,
    QueueItem,
    QueueRule,
    Resolution,
    Review,
    ReviewState,
    ReviewStatus,
    RubricVersion,
)
from chats.review.rubric import answers_errors, normalized_questions, rubric_errors, same_questions
from chats.roles import NONE, lead_required, person_roles
from chats.selectors.pinning import Pin, active_path_pin, resolution_pin, review_pin
from chats.selectors.review import current_rubric
from chats.services.audit import Actor, audit_record, audit_record_changes, audited_set, audited_write, jsonable
from chats.storable import check


@audited_write
def conversation_set_review_status(*, actor: User, conversation: Conversation, status: str) -> bool:
    if status not in ReviewStatus.values:
        raise InvalidInput([{"path": "/status", "message": f"must be one of {', '.join(ReviewStatus.values)}"}])
    return audited_set(
        conversation,
        {"review_status": status},
        actor=actor,
        action=AuditAction.CONVERSATION_STATUS_CHANGED,
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
    )


# --- Team review: queues, rubrics, items, leases, reviews and resolutions ---------------------------------------

LEASE_DURATION = timedelta(minutes=30)  # the default of a queue's lease_minutes
ASSIGNMENT_DURATION = timedelta(hours=24)  # a lead's assignment, unless the queue's leases are longer
ADD_BATCH = 2000


def _ensure_lead(actor: Actor) -> None:
    """Leading a queue (creating and editing it, adding conversations, assigning, releasing and resolving items) is
    for leads: checked here, by each of those services, whichever page or endpoint calls it."""
    lead_required(person_roles(actor) if isinstance(actor, User) else NONE)


def _checked_rubric(questions: Any) -> list[dict[str, Any]]:
    """The questions in the canonical form a version stores (chats.review.rubric.normalized_questions)."""
    errors = rubric_errors(questions)
    if errors:
        raise InvalidInput(errors)
    return normalized_questions(questions)


def _checked_instructions(instructions: object) -> str:
    if not isinstance(instructions, str):
        raise InvalidInput([{"path": "/instructions", "message": "must be a string"}])
    check(instructions, "/instructions")
    return instructions


def _checked_reviews_per_item(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_REVIEWS_PER_ITEM:
        raise InvalidInput([{"path": "/reviews_per_item", "message": f"must be from 1 to {MAX_REVIEWS_PER_ITEM}"}])
    return value


def _checked_name(name: object, queue: Queue | None = None) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidInput([{"path": "/name", "message": "must be a non-empty string of at most 200 characters"}])
    check(name, "/name")
    taken = Queue.objects.filter(name=name.strip())
    if queue is not None:
        taken = taken.exclude(pk=queue.pk)
    if taken.exists():
        raise InvalidInput([{"path": "/name", "message": "a queue already has this name"}])
    return name.strip()


def _queue_state(queue: Queue, rubric: RubricVersion) -> JSONObject:
    return {
        "name": queue.name,
        "instructions": queue.instructions,
        "reviews_per_item": queue.reviews_per_item,
        "members": sorted(queue.members.values_list("username", flat=True)),
        "rubric_version": rubric.version,
        "questions": rubric.questions,
    }


@audited_write
def queue_create(
    *,
    actor: User,
    name: str,
    questions: list[dict[str, Any]],
    instructions: str = "",
    reviews_per_item: int = 1,
    members: Iterable[User] = (),
) -> Queue:
    """A new queue with its rubric's first version."""
    _ensure_lead(actor)
    checked = _checked_rubric(questions)
    queue = Queue.objects.create(
        name=_checked_name(name),
        instructions=_checked_instructions(instructions),
        reviews_per_item=_checked_reviews_per_item(reviews_per_item),
        created_by=actor,
    )
    rubric = RubricVersion.objects.create(queue=queue, version=1, questions=checked)
    queue.members.set(list(members))
    audit_record(
        actor=actor,
        action=AuditAction.QUEUE_CREATED,
        target_type="queue",
        target_id=queue.pk,
        after=_queue_state(queue, rubric),
    )
    return queue


@audited_write
def queue_update(
    *,
    actor: User,
    queue: Queue,
    name: str | None = None,
    instructions: str | None = None,
    reviews_per_item: int | None = None,
    questions: list[dict[str, Any]] | None = None,
    members: Iterable[User] | None = None,
) -> bool:
    """Change what is given. Questions that differ in meaning from the current version's (`same_questions`: the
    canonical forms differ) become a new version; the same questions, however spelled, change nothing. A version is
    never changed once written: reviews, drafts and resolutions keep the one they were given under. Whether
    anything changed."""
    _ensure_lead(actor)
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    rubric = current_rubric(queue)
    before = _queue_state(queue, rubric)
    if name is not None:
        queue.name = _checked_name(name, queue)
    if instructions is not None:
        queue.instructions = _checked_instructions(instructions)
    if reviews_per_item is not None:
        queue.reviews_per_item = _checked_reviews_per_item(reviews_per_item)
    queue.save(update_fields=["name", "instructions", "reviews_per_item"])
    if questions is not None:
        checked = _checked_rubric(questions)
        if not same_questions(checked, rubric.questions):
            rubric = RubricVersion.objects.create(queue=queue, version=rubric.version + 1, questions=checked)
    if members is not None:
        queue.members.set(list(members))
    after = _queue_state(queue, rubric)
    if after == before:
        return False
    audit_record_changes(
        actor=actor,
        action=AuditAction.QUEUE_UPDATED,
        target_type="queue",
        target_id=queue.pk,
        before=before,
        after=after,
    )
    return True


@audited_write
def queue_add_conversations(*, actor: Actor, queue: Queue, conversations: QuerySet[Conversation]) -> int:
    """Add every conversation of `conversations` (set-based; those already in the queue are left as they are).
    How many were added."""
    _ensure_lead(actor)
    ids = conversations.order_by().values_list("pk", flat=True).iterator(chunk_size=ADD_BATCH)
    return queue_add_conversation_ids(actor=actor, queue=queue, conversation_ids=ids)


@audited_write
def queue_add_conversation_ids(
    *, actor: Actor, queue: Queue, conversation_ids: Iterable[int], rule: QueueRule | None = None
) -> int:
    """Add the conversations of these primary keys, ADD_BATCH at a time in two queries each (those already in the
    queue are left as they are); one event says how many were added, and by which rule when a rule added them.
    How many were added."""
    now = timezone.now()
    added = 0
    for chunk in itertools.batched(conversation_ids, ADD_BATCH):
        present = set(
            QueueItem.objects.filter(queue=queue, conversation_id__in=chunk).values_list("conversation_id", flat=True)
        )
        missing = [pk for pk in dict.fromkeys(chunk) if pk not in present]
        QueueItem.objects.bulk_create(
            [QueueItem(queue=queue, conversation_id=pk, created_at=now) for pk in missing], ignore_conflicts=True
        )
        added += len(missing)
    if added:
        after: JSONObject = {"added": added}
        if rule is not None:
            after["rule"] = rule.pk
        audit_record(
            actor=actor, action=AuditAction.QUEUE_ITEMS_ADDED, target_type="queue", target_id=queue.pk, after=after
        )
    return added


def _others_holding(item_ref: OuterRef, reviewer: User, now: datetime) -> Subquery:
    held = Lease.objects.filter(item=item_ref, expires_at__gt=now).exclude(reviewer=reviewer)
    return Subquery(held.order_by().values("item").annotate(n=Count("pk")).values("n")[:1])


def _free_slots(item: QueueItem, reviewer: User, now: datetime) -> int:
    """The item's slots left for `reviewer`, counted afresh (the caller holds its queue's row lock)."""
    submitted = item.reviews.filter(state=ReviewState.SUBMITTED).count()
    held = Lease.objects.filter(item=item, expires_at__gt=now).exclude(reviewer=reviewer).count()
    return item.queue.reviews_per_item - submitted - held


def _lease(*, actor: User, item: QueueItem, reviewer: User, until: datetime, action: AuditAction) -> Lease:
    pin = active_path_pin(item.conversation_id)  # the path handed out: the active one now
    lease, _ = Lease.objects.update_or_create(
        conversation_id=item.conversation_id,
        item=item,
        reviewer=reviewer,
        defaults={"expires_at": until, **pin.fields()},
    )
    audit_record(
        actor=actor,
        action=action,
        target_type="queue_item",
        target_id=item.pk,
        conversation_uuid=item.conversation.uuid,
        after={"reviewer": reviewer.get_username(), "expires_at": jsonable(until)},
    )
    return lease


def _lease_duration(queue: Queue) -> timedelta:
    """How long "next item" holds an item of `queue` for its reviewer."""
    return timedelta(minutes=queue.lease_minutes)


def _checked_lease_minutes(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LEASE_MINUTES:
        raise InvalidInput([{"path": "/lease_minutes", "message": f"must be from 1 to {MAX_LEASE_MINUTES}"}])
    return value


@audited_write
def queue_set_lease_minutes(*, actor: User, queue: Queue, lease_minutes: int) -> bool:
    """Change how long "next item" holds an item of `queue` (leases already given keep their expiry). Whether it
    changed."""
    _ensure_lead(actor)
    minutes = _checked_lease_minutes(lease_minutes)
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    return audited_set(queue, {"lease_minutes": minutes}, actor=actor, action=AuditAction.QUEUE_UPDATED)


def _ensure_member(queue: Queue, reviewer: User) -> None:
    if not queue.members.filter(pk=reviewer.pk).exists():
        raise NotAllowed(f"{reviewer.get_username()} is not a member of the queue {queue.name!r}.")


@audited_write
def item_lease_next(*, queue: Queue, reviewer: User) -> QueueItem | None:
    """The item `reviewer` should review next in `queue`, held for them for the queue's lease_minutes: the one they hold
    already, or else the oldest that still needs reviews (submitted reviews and others' unexpired leases take its
    slots) and that they have not reviewed. None when there is none.

    Race-free: the queue's row is locked first (as review_submit does), and the slots are counted after the lock
    is granted, in a statement that sees every lease committed before. Locking items with SKIP LOCKED instead
    answers None to a caller who finds every item held by others at that instant, though slots are free; and the
    audit chain serializes audited writes to commit anyway, so the queue's lock costs no concurrency."""
    _ensure_member(queue, reviewer)
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    now = timezone.now()
    until = now + _lease_duration(queue)
    held = (
        QueueItem.objects.filter(queue=queue, leases__reviewer=reviewer, leases__expires_at__gt=now)
        .exclude(reviews__reviewer=reviewer, reviews__state=ReviewState.SUBMITTED)
        .order_by("created_at", "id")
        .first()
    )
    if held is None:
        submitted = Review.objects.filter(item=OuterRef("pk"), state=ReviewState.SUBMITTED)
        held = (
            QueueItem.objects.filter(queue=queue, submitted_count__lt=queue.reviews_per_item)
            .exclude(Exists(submitted.filter(reviewer=reviewer)))
            .annotate(others=Coalesce(_others_holding(OuterRef("pk"), reviewer, now), 0))
            .filter(others__lt=queue.reviews_per_item - F("submitted_count"))
            .order_by("created_at", "id")
            .first()
        )
    if held is None:
        return None
    _lease(actor=reviewer, item=held, reviewer=reviewer, until=until, action=AuditAction.QUEUE_ITEM_LEASED)
    return held


@audited_write
def item_assign(*, actor: User, item: QueueItem, reviewer: User) -> Lease:
    """A lead hands an item to a member of its queue: a lease for ASSIGNMENT_DURATION (or the queue's lease_minutes
    when longer), even over the item's slots."""
    _ensure_lead(actor)
    _ensure_member(item.queue, reviewer)
    if item.reviews.filter(reviewer=reviewer, state=ReviewState.SUBMITTED).exists():
        raise InvalidInput([{"path": "/reviewer", "message": "has already reviewed this item"}])
    until = timezone.now() + max(ASSIGNMENT_DURATION, _lease_duration(item.queue))
    return _lease(actor=actor, item=item, reviewer=reviewer, until=until, action=AuditAction.QUEUE_ITEM_ASSIGNED)


@audited_write
def item_release(*, actor: User, item: QueueItem, reviewer: User | None = None) -> int:
    """A lead frees an item's slots held by `reviewer` (by anyone when None). How many leases were released."""
    _ensure_lead(actor)
    leases = Lease.objects.filter(item=item)
    if reviewer is not None:
        leases = leases.filter(reviewer=reviewer)
    holders = sorted(leases.values_list("reviewer__username", flat=True))
    if not holders:
        return 0
    leases.delete()
    audit_record(
        actor=actor,
        action=AuditAction.QUEUE_ITEM_RELEASED,
        target_type="queue_item",
        target_id=item.pk,
        conversation_uuid=item.conversation.uuid,
        before={"reviewers": holders},
    )
    return len(holders)


def _review_answers(item: QueueItem, answers: object, *, complete: bool, pin: Pin) -> tuple[RubricVersion, JSONObject]:
    """`answers` checked against the queue's current rubric and the path the answer is about, `pin`
    (answers_errors: the one validator of reviews, drafts and resolutions)."""
    rubric = current_rubric(item.queue)
    errors = answers_errors(rubric.questions, answers, complete=complete, message_keys=pin.message_roles)
    if errors:
        raise InvalidInput(errors)
    return rubric, cast(JSONObject, answers)


def _review_begin(
    reviewer: User, item: QueueItem, answers: object, *, complete: bool
) -> tuple[Pin, RubricVersion, JSONObject]:
    """What saving and submitting a review start with: the reviewer a member of the queue, `answers` checked
    against the path the reviewer sees, and the lock review_save_draft, review_submit and item_lease_next take, so
    that writes of one review sent together (quick key presses) wait for each other instead of both inserting it."""
    _ensure_member(item.queue, reviewer)
    pin = review_pin(item=item, reviewer=reviewer, now=timezone.now())
    rubric, checked = _review_answers(item, answers, complete=complete, pin=pin)
    Queue.objects.select_for_update().filter(pk=item.queue_id).first()
    return pin, rubric, checked


def _unsubmitted(review: Review | None) -> Review | None:
    if review is not None and review.state == ReviewState.SUBMITTED:
        raise InvalidInput([{"path": "/answers", "message": "this review is already submitted"}])
    return review


def _review_write(
    review: Review | None, *, item: QueueItem, reviewer: User, values: dict[str, Any], now: datetime
) -> Review:
    """`reviewer`'s review of `item` with `values`: created, or `review` updated in place."""
    if review is None:
        return Review.objects.create(conversation_id=item.conversation_id, item=item, reviewer=reviewer, **values)
    for field, value in values.items():
        setattr(review, field, value)
    review.updated_at = now
    review.save(update_fields=[*values, "updated_at"])
    return review


def _review_audit(
    action: AuditAction, *, reviewer: User, item: QueueItem, review: Review, rubric: RubricVersion, answers: JSONObject
) -> None:
    audit_record(
        actor=reviewer,
        action=action,
        target_type="review",
        target_id=review.pk,
        conversation_uuid=item.conversation.uuid,
        after={"item": item.pk, "rubric_version": rubric.version, "answers": answers},
    )


@audited_write
def review_save_draft(*, reviewer: User, item: QueueItem, answers: object) -> Review:
    """Save `reviewer`'s answers so far (any subset) as a draft, under the queue's current rubric."""
    pin, rubric, checked = _review_begin(reviewer, item, answers, complete=False)
    review = _unsubmitted(Review.objects.select_for_update().filter(item=item, reviewer=reviewer).first())
    values = {"rubric_version": rubric, "answers": checked, **pin.fields()}
    review = _review_write(review, item=item, reviewer=reviewer, values=values, now=timezone.now())
    _review_audit(
        AuditAction.REVIEW_DRAFT_SAVED, reviewer=reviewer, item=item, review=review, rubric=rubric, answers=checked
    )
    return review


@audited_write
def review_submit(*, reviewer: User, item: QueueItem, answers: object) -> Review:
    """Submit `reviewer`'s review of `item`, once: every question but the text ones answered. The reviewer must
    hold the item, or the item must still have a free slot."""
    pin, rubric, checked = _review_begin(reviewer, item, answers, complete=True)
    item = QueueItem.objects.select_related("queue").get(pk=item.pk)
    now = timezone.now()
    review = _unsubmitted(Review.objects.filter(item=item, reviewer=reviewer).first())
    holds = Lease.objects.filter(item=item, reviewer=reviewer, expires_at__gt=now).exists()
    if not holds and _free_slots(item, reviewer, now) <= 0:
        raise InvalidInput([{"path": "/item", "message": "this item has all the reviews it needs"}])
    values = {
        "rubric_version": rubric,
        "answers": checked,
        "state": ReviewState.SUBMITTED,
        "submitted_at": now,
        **pin.fields(),
    }
    review = _review_write(review, item=item, reviewer=reviewer, values=values, now=now)
    Lease.objects.filter(item=item, reviewer=reviewer).delete()
    QueueItem.objects.filter(pk=item.pk).update(submitted_count=F("submitted_count") + 1)
    _review_audit(
        AuditAction.REVIEW_SUBMITTED, reviewer=reviewer, item=item, review=review, rubric=rubric, answers=checked
    )
    return review


@audited_write
def item_resolve(*, actor: User, item: QueueItem, answers: object, correction: str = "") -> Resolution:
    """A lead's gold answer for `item` (every question but the text ones), and the final correction; a later
    resolution replaces it (a new row: a resolution is never changed in place), with the previous answers in the
    event."""
    _ensure_lead(actor)
    pin = resolution_pin(item)
    rubric, answers = _review_answers(item, answers, complete=True, pin=pin)
    if not isinstance(correction, str):
        raise InvalidInput([{"path": "/correction", "message": "must be a string"}])
    check(correction, "/correction")
    existing = Resolution.objects.select_for_update().filter(item=item).first()
    before = None if existing is None else {"answers": existing.answers, "correction": existing.correction}
    if existing is not None:
        existing.delete()
    resolution = Resolution.objects.create(
        conversation_id=item.conversation_id,
        item=item,
        lead=actor,
        rubric_version=rubric,
        answers=answers,
        correction=correction,
        created_at=timezone.now(),
        **pin.fields(),
    )
    audit_record(
        actor=actor,
        action=AuditAction.QUEUE_ITEM_RESOLVED,
        target_type="queue_item",
        target_id=item.pk,
        conversation_uuid=item.conversation.uuid,
        before=before,
        after={"rubric_version": rubric.version, "answers": answers, "correction": correction},
    )
    return resolution
