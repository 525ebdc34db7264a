"""Reads of team review: a queue's current rubric, the queues and items a person sees, and reviews as blind
review lets a person see them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet
from django.db.models.functions import TruncDate
from django.http import Http404
from django.utils import timezone

from chats.models import Lease, Queue, QueueItem, Resolution, Review, ReviewState, RubricVersion
from chats.review.agreement import QuestionGroup, rubric_agreement
from chats.roles import Roles
from chats.selectors.pinning import with_review_pin


def current_rubric(queue: Queue) -> RubricVersion:
    """The queue's latest rubric version (every queue is created with one)."""
    return RubricVersion.objects.filter(queue=queue).latest("version")


def queues_visible(user: Any, roles: Roles) -> QuerySet[Queue]:
    """The queues a person sees: every queue for leads and auditors, the queues they work for the others; with
    their members and rubric versions (a fixed number of queries)."""
    queues = (
        _visible(Queue.objects.all(), user, roles)
        .select_related("created_by")
        .prefetch_related("members", Prefetch("rubric_versions", queryset=RubricVersion.objects.order_by("-version")))
    )
    return queues.annotate(item_count=Count("items", distinct=True)).order_by("name")


def _visible(queues: QuerySet[Queue], user: Any, roles: Roles) -> QuerySet[Queue]:
    if roles.can_lead or roles.can_audit:
        return queues
    if not roles.can_read:
        return queues.none()
    return queues.filter(members=user)


def queue_visible(user: Any, roles: Roles, pk: int, *, detail: bool = False) -> Queue:
    """One queue the person sees (with its members, rubric and item count when `detail`), or 404."""
    queues = queues_visible(user, roles) if detail else _visible(Queue.objects.all(), user, roles)
    queue = queues.filter(pk=pk).first()
    if queue is None:
        raise Http404("No such queue among those you may see.")
    return queue


def queue_items(queue: Queue) -> QuerySet[QueueItem]:
    """A queue's items, oldest first, with their conversation, whether a lead resolved them and whether the
    conversation grew since they were reviewed (with_review_pin)."""
    return with_review_pin(
        QueueItem.objects.filter(queue=queue)
        .select_related("conversation")
        .annotate(resolved=Exists(Resolution.objects.filter(item=OuterRef("pk"))))
        .order_by("created_at", "id")
    )


def queue_item(queue: Queue, pk: int) -> QueueItem:
    item = QueueItem.objects.select_related("queue", "conversation__source").filter(queue=queue, pk=pk).first()
    if item is None:
        raise Http404("No such item in this queue.")
    return item


@dataclass(frozen=True)
class VisibleReviews:
    reviews: list[Review]
    hidden: int  # submitted reviews of others the caller may not see yet


def item_reviews(item: QueueItem, user: Any, roles: Roles) -> VisibleReviews:
    """Blind review: a reviewer sees their own review, and the others' submitted ones only once theirs is
    submitted; leads and auditors see every review. Drafts of others are never shown."""
    reviews = list(
        Review.objects.filter(item=item).select_related("reviewer", "rubric_version").order_by("submitted_at", "id")
    )
    if roles.can_lead or roles.can_audit:
        return VisibleReviews(reviews, 0)
    own = [review for review in reviews if review.reviewer_id == user.pk]
    others = [r for r in reviews if r.reviewer_id != user.pk and r.state == ReviewState.SUBMITTED]
    if own and own[0].state == ReviewState.SUBMITTED:
        return VisibleReviews([r for r in reviews if r in own or r in others], 0)
    return VisibleReviews(own, len(others))


def queue_agreement(queue: Queue) -> list[QuestionGroup]:
    """Agreement per question of the queue, over submitted reviews only (design/review.md, Agreement), with
    reviewers named by user name: each answer compared only with answers to the same question as it stood in its
    review's rubric version (`rubric_agreement`). Two queries, whatever the number of reviews."""
    versions = dict(RubricVersion.objects.filter(queue=queue).values_list("version", "questions"))
    submitted = Review.objects.filter(item__queue=queue, state=ReviewState.SUBMITTED).values_list(
        "item_id", "reviewer__username", "rubric_version__version", "answers"
    )
    return rubric_agreement(versions, submitted.iterator(chunk_size=2000), current=max(versions, default=0))


def queue_choices() -> list[Queue]:
    """Every queue's id and name, for a lead's choice of where to add conversations (one query)."""
    return list(Queue.objects.order_by("name").only("pk", "name"))


def queues_listed(user: Any, roles: Roles) -> QuerySet[Queue]:
    """queues_visible with how many of each queue's items are done."""
    done = Q(items__submitted_count__gte=F("reviews_per_item"))
    return queues_visible(user, roles).annotate(done_count=Count("items", filter=done, distinct=True))


@dataclass(frozen=True)
class QueueProgress:
    done: int
    in_progress: int  # not done, but reviewed, drafted or held by someone
    waiting: int
    reviews_by_person: list[tuple[str, int]]  # (username, submitted reviews), most first
    reviews_by_day: list[tuple[str, int]]  # (ISO day, submitted reviews) over the last REVIEW_DAYS days, oldest first


REVIEW_DAYS = 30


def queue_progress(queue: Queue) -> QueueProgress:
    """Items done, in progress and waiting, and the submitted reviews per person and per day (three queries)."""
    now = timezone.now()
    started = Q(submitted_count__gt=0) | Q(has_lease=True) | Q(has_review=True)
    counts = (
        QueueItem.objects.filter(queue=queue)
        .annotate(
            has_lease=Exists(Lease.objects.filter(item=OuterRef("pk"), expires_at__gt=now)),
            has_review=Exists(Review.objects.filter(item=OuterRef("pk"))),
        )
        .aggregate(
            done=Count("pk", filter=Q(submitted_count__gte=queue.reviews_per_item)),
            in_progress=Count("pk", filter=Q(submitted_count__lt=queue.reviews_per_item) & started),
            total=Count("pk"),
        )
    )
    by_person = (
        Review.objects.filter(item__queue=queue, state=ReviewState.SUBMITTED)
        .values("reviewer__username")
        .annotate(n=Count("pk"))
        .order_by("-n", "reviewer__username")
    )
    by_day = (
        Review.objects.filter(
            item__queue=queue,
            state=ReviewState.SUBMITTED,
            submitted_at__gte=now - timedelta(days=REVIEW_DAYS),
        )
        .annotate(day=TruncDate("submitted_at"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by("day")
    )
    return QueueProgress(
        reviews_by_day=[(row["day"].isoformat(), row["n"]) for row in by_day],
        done=counts["done"],
        in_progress=counts["in_progress"],
        waiting=counts["total"] - counts["done"] - counts["in_progress"],
        reviews_by_person=[(row["reviewer__username"], row["n"]) for row in by_person],
    )


def queue_items_with_holders(queue: Queue, *, limit: int) -> list[QueueItem]:
    """The queue's first `limit` items with their unexpired leases (and holders) and resolution flag (two
    queries)."""
    leases = (
        Lease.objects.filter(expires_at__gt=timezone.now()).select_related("reviewer").order_by("reviewer__username")
    )
    return list(queue_items(queue).prefetch_related(Prefetch("leases", queryset=leases, to_attr="held"))[:limit])


def queue_adjudication(queue: Queue, *, limit: int) -> list[QueueItem]:
    """The queue's items with at least one submitted review, each with its submitted reviews (and reviewers) and its
    resolution, oldest first (two queries)."""
    submitted = (
        Review.objects.filter(state=ReviewState.SUBMITTED).select_related("reviewer").order_by("submitted_at", "id")
    )
    return list(
        with_review_pin(QueueItem.objects.filter(queue=queue, submitted_count__gt=0))
        .select_related("conversation", "resolution")
        .prefetch_related(Prefetch("reviews", queryset=submitted, to_attr="submitted"))
        .order_by("created_at", "id")[:limit]
    )
