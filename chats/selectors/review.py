"""Reads of team review: a queue's current rubric, the queues and items a person sees, and reviews as blind
review lets a person see them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, QuerySet
from django.http import Http404

from chats.models import Queue, QueueItem, Resolution, Review, ReviewState, RubricVersion
from chats.review.agreement import QuestionAgreement, question_agreement
from chats.roles import Roles


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
    """A queue's items, oldest first, with their conversation and whether a lead resolved them."""
    return (
        QueueItem.objects.filter(queue=queue)
        .select_related("conversation")
        .annotate(resolved=Exists(Resolution.objects.filter(item=OuterRef("pk"))))
        .order_by("created_at", "id")
    )


def queue_item(queue: Queue, pk: int) -> QueueItem:
    item = QueueItem.objects.select_related("queue", "conversation").filter(queue=queue, pk=pk).first()
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


def queue_agreement(queue: Queue) -> dict[str, QuestionAgreement]:
    """Agreement per question of the queue's current rubric, over submitted reviews only (design/review.md,
    Agreement). A question on a kind of message counts each (item, message) as a unit. Free-text questions have
    none. Two queries, whatever the number of reviews."""
    questions = [q for q in current_rubric(queue).questions if q.get("type") != "text"]
    tables: dict[str, dict[tuple[int, str], dict[int, Any]]] = {q["key"]: {} for q in questions}
    submitted = Review.objects.filter(item__queue=queue, state=ReviewState.SUBMITTED).values_list(
        "item_id", "reviewer_id", "answers"
    )
    for item_id, reviewer_id, answers in submitted.iterator(chunk_size=2000):
        for question in questions:
            key = question["key"]
            if key not in answers:
                continue
            value = answers[key]
            per_unit = value if str(question.get("target", "conversation")).startswith("role:") else {"": value}
            if not isinstance(per_unit, dict):
                continue
            for unit, answer in per_unit.items():
                tables[key].setdefault((item_id, unit), {})[reviewer_id] = answer
    return {
        question["key"]: question_agreement(question["type"], tables[question["key"]], options=_domain(question))
        for question in questions
    }


def _domain(question: dict[str, Any]) -> list[Any] | None:
    if question["type"] == "ordinal":
        scale = question["scale"]
        return list(range(int(scale["min"]), int(scale["max"]) + 1))
    if question["type"] in ("categorical", "multi_label"):
        return list(question["options"])
    return None
