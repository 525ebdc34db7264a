"""Reads of team review: a queue's current rubric, the queues and items a person sees, and reviews as blind
review lets a person see them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    F,
    Func,
    IntegerField,
    Model,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate
from django.http import Http404
from django.utils import timezone

from chats.json_types import JSON, JSONMapping
from chats.models import Lease, Queue, QueueItem, Resolution, Review, ReviewState, RubricVersion
from chats.review.rubric import ORDINAL_TOLERANCE
from chats.review.rubric_agreement import QuestionGroup, rubric_agreement
from chats.roles import Roles
from chats.selectors.pinning import items_grown_since_review, with_review_pin


def current_rubric(queue: Queue) -> RubricVersion:
    """The queue's latest rubric version (every queue is created with one)."""
    return RubricVersion.objects.filter(queue=queue).latest("version")


def queues_visible(user: User | AnonymousUser, roles: Roles) -> QuerySet[Queue]:
    """The queues a person sees: every queue for leads and auditors, the queues they work for the others; with
    their members and rubric versions (a fixed number of queries)."""
    queues = (
        _visible(Queue.objects.all(), user, roles)
        .select_related("created_by")
        .prefetch_related("members", Prefetch("rubric_versions", queryset=RubricVersion.objects.order_by("-version")))
    )
    return queues.annotate(item_count=Count("items", distinct=True)).order_by("name")


def _visible(queues: QuerySet[Queue], user: Any, roles: Roles) -> QuerySet[Queue]:
    if roles.can_oversee:
        return queues
    if not roles.can_read:
        return queues.none()
    return queues.filter(members=user)


def queue_visible(user: User | AnonymousUser, roles: Roles, pk: int, *, detail: bool = False) -> Queue:
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


def item_reviews(item: QueueItem, user: User | AnonymousUser, roles: Roles) -> VisibleReviews:
    """Blind review: a reviewer sees their own review, and the others' submitted ones only once theirs is
    submitted; leads and auditors see every review. Drafts of others are never shown."""
    reviews = list(
        Review.objects.filter(item=item).select_related("reviewer", "rubric_version").order_by("submitted_at", "id")
    )
    if roles.can_oversee:
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


def queues_listed(user: User | AnonymousUser, roles: Roles) -> QuerySet[Queue]:
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


# --------------------------------------------------------------------------------------------------------------
# Items by state, a page at a time; progress per queue and per reviewer


@dataclass(frozen=True)
class StateScope:
    """What a state's condition may depend on: the queue, its current rubric's questions, and now (leases)."""

    queue: Queue
    questions: list[dict[str, Any]]
    now: datetime


@dataclass(frozen=True)
class ItemState:
    """A named state of a queue's items: `condition` gives the rows in it, as a condition on `QueueItem` that a
    filter and a filtered COUNT can both use (so that every state's count is one query, however many states)."""

    name: str
    label: str
    condition: Callable[[StateScope], Q]


def _resolved(scope: StateScope) -> Q:
    return Q(Exists(Resolution.objects.filter(item=OuterRef("pk"))))


def _needs_resolution(scope: StateScope) -> Q:
    return Q(submitted_count__gte=scope.queue.reviews_per_item) & ~_resolved(scope)


def _in_progress(scope: StateScope) -> Q:
    leased = Lease.objects.filter(item=OuterRef("pk"), expires_at__gt=scope.now)
    started = Q(submitted_count__gt=0) | Q(Exists(leased)) | Q(Exists(Review.objects.filter(item=OuterRef("pk"))))
    return Q(submitted_count__lt=scope.queue.reviews_per_item) & started


def _disagreement(scope: StateScope) -> Q:
    return Q(disagreement_sql(scope.questions))


def _grown_since_review(scope: StateScope) -> Q:
    return Q(pk__in=items_grown_since_review(QueueItem.objects.filter(queue=scope.queue)).values("pk"))


# The states a list may be filtered by, in the order the pages offer them. One more is one more entry here (its
# condition a Q on QueueItem; a selector over a queryset fits as Q(pk__in=selector(items).values("pk"))).
ITEM_STATES: dict[str, ItemState] = {
    state.name: state
    for state in (
        ItemState("needs_resolution", "Needs resolution", _needs_resolution),
        ItemState("disagreement", "Disagreement", _disagreement),
        ItemState("in_progress", "In progress", _in_progress),
        ItemState("resolved", "Resolved", _resolved),
        ItemState("grown_since_review", "Grown since review", _grown_since_review),
    )
}
ITEM_STATE_HELP = (
    "`needs_resolution`: every review wanted is in, and no lead has resolved it; `disagreement`: two submitted "
    "reviews differ on a question of the current rubric (as the adjudication page marks them: ordinal answers more "
    "than one apart, any other difference for the other types, text questions never); `in_progress`: reviews still "
    "wanted, and someone has reviewed, drafted or holds it; `resolved`: a lead gave it a gold answer; "
    "`grown_since_review`: reviewed, and the conversation's active path no longer ends where the review did."
)


def _differ(kind: str, x: str, y: str) -> str:
    """SQL: whether two jsonb answers `x` and `y` to a question of `kind` disagree (chats.review.rubric._disagree)."""
    given = f"{x} IS NOT NULL AND {y} IS NOT NULL AND {x} <> 'null'::jsonb AND {y} <> 'null'::jsonb"
    if kind == "multi_label":
        return f"jsonb_typeof({x}) = 'array' AND jsonb_typeof({y}) = 'array' AND NOT ({x} @> {y} AND {y} @> {x})"
    if kind == "ordinal":
        whole = "jsonb_typeof({0}) = 'number' AND ({0} #>> '{{}}') ~ '^-?[0-9]+$'"
        return (
            f"{whole.format(x)} AND {whole.format(y)} "
            f"AND abs(({x} #>> '{{}}')::numeric - ({y} #>> '{{}}')::numeric) > {ORDINAL_TOLERANCE}"
        )
    return f"{given} AND {x} <> {y}"


def disagreement_sql(questions: Sequence[JSONMapping]) -> RawSQL:
    """A condition on a queue's item row (table chats_queueitem): two of its submitted reviews disagree on one of
    these questions, as `chats.review.rubric.disagreements` decides for the adjudication page (on any one message
    for a question about messages)."""
    parts: list[str] = []
    params: list[JSON] = []
    for question in questions:
        kind = question.get("type")
        if kind not in ("categorical", "boolean", "multi_label", "ordinal"):
            continue
        if str(question.get("target", "conversation")) == "conversation":
            parts.append(
                "EXISTS (SELECT 1 FROM (SELECT a.answers -> %s::text AS x, b.answers -> %s::text AS y) v "
                f"WHERE {_differ(str(kind), 'v.x', 'v.y')})"
            )
            params += [question["key"]] * 2
        else:
            each = "jsonb_each(CASE WHEN jsonb_typeof({0}.answers -> %s::text) = 'object' "
            each += "THEN {0}.answers -> %s::text ELSE '{{}}'::jsonb END)"
            parts.append(
                f"EXISTS (SELECT 1 FROM {each.format('a')} ea JOIN {each.format('b')} eb ON ea.key = eb.key "
                f"WHERE {_differ(str(kind), 'ea.value', 'eb.value')})"
            )
            params += [question["key"]] * 4
    if not parts:
        return RawSQL("false", [], output_field=BooleanField())
    sql = (
        "EXISTS (SELECT 1 FROM chats_review a JOIN chats_review b ON b.item_id = a.item_id AND b.id > a.id "
        "WHERE a.item_id = chats_queueitem.id AND a.state = 'submitted' AND b.state = 'submitted' "
        f"AND ({' OR '.join(parts)}))"
    )
    # Every fragment is a constant of this module; the question keys are parameters.
    return RawSQL(sql, params, output_field=BooleanField())  # noqa: S611


def state_scope(queue: Queue, questions: list[dict[str, Any]] | None = None) -> StateScope:
    """The scope of the states of `queue`'s items now (reads the current rubric unless `questions` are given)."""
    return StateScope(queue, current_rubric(queue).questions if questions is None else questions, timezone.now())


def item_state_condition(scope: StateScope, state: str | None) -> Q:
    """The condition of the named state (None: every item). Raises KeyError for a name not in ITEM_STATES."""
    return Q() if state is None else ITEM_STATES[state].condition(scope)


def item_state_counts(scope: StateScope, *, reviewed_only: bool = False) -> dict[str, int]:
    """How many of the queue's items (those with a submitted review when `reviewed_only`) are in each state, and
    `all` of them: one query, whatever the number of states or items."""
    items = QueueItem.objects.filter(queue=scope.queue)
    if reviewed_only:
        items = items.filter(submitted_count__gt=0)
    counts = {name: Count("pk", filter=state.condition(scope)) for name, state in ITEM_STATES.items()}
    return dict(items.aggregate(all=Count("pk"), **counts))


PAGE_SIZE = 50


@dataclass(frozen=True)
class ItemPage:
    items: list[QueueItem]
    number: int  # from 1
    pages: int  # at least 1
    total: int  # items in the state (all pages)
    counts: dict[str, int]  # per state, and "all"

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def _page_of(
    items: QuerySet[QueueItem], scope: StateScope, state: str | None, page: int, size: int, *, reviewed_only: bool
) -> ItemPage:
    counts = item_state_counts(scope, reviewed_only=reviewed_only)
    total = counts["all" if state is None else state]
    pages = max(1, -(-total // size))
    number = min(max(1, page), pages)
    start = (number - 1) * size
    return ItemPage(list(items[start : start + size]), number, pages, total, counts)


def queue_items_page(
    queue: Queue,
    *,
    state: str | None = None,
    page: int = 1,
    size: int = PAGE_SIZE,
    questions: list[dict[str, Any]] | None = None,
) -> ItemPage:
    """One page of the queue's items in `state` (every item when None), oldest first, each with its unexpired
    leases (and holders) and whether it is resolved; with the count of every state. Three queries (the counts, the
    page, its leases), and one for the current rubric unless its `questions` are given."""
    scope = state_scope(queue, questions)
    leases = Lease.objects.filter(expires_at__gt=scope.now).select_related("reviewer").order_by("reviewer__username")
    items = (
        queue_items(queue)
        .filter(item_state_condition(scope, state))
        .prefetch_related(Prefetch("leases", queryset=leases, to_attr="held"))
    )
    return _page_of(items, scope, state, page, size, reviewed_only=False)


def queue_adjudication_page(
    queue: Queue, questions: list[dict[str, Any]], *, state: str | None = None, page: int = 1, size: int = PAGE_SIZE
) -> ItemPage:
    """One page of the queue's items with at least one submitted review, in `state` (all of them when None):
    those with a disagreement first, then oldest first; each with its submitted reviews (and reviewers) and its
    resolution; with the count of every state among them. Three queries (the counts, the page, its reviews)."""
    scope = state_scope(queue, questions)
    submitted = (
        Review.objects.filter(state=ReviewState.SUBMITTED).select_related("reviewer").order_by("submitted_at", "id")
    )
    items = (
        with_review_pin(QueueItem.objects.filter(queue=queue, submitted_count__gt=0))
        .filter(item_state_condition(scope, state))
        .select_related("conversation", "resolution")
        .annotate(disagree=disagreement_sql(questions))
        .prefetch_related(Prefetch("reviews", queryset=submitted, to_attr="submitted"))
        .order_by(F("disagree").desc(), "created_at", "id")
    )
    return _page_of(items, scope, state, page, size, reviewed_only=True)


@dataclass(frozen=True)
class ReviewerProgress:
    username: str
    done: int  # submitted reviews in the queue
    leased: int  # items held for them now (unexpired leases)
    remaining: int  # items that still want reviews and that they have not reviewed


@dataclass(frozen=True)
class Progress:
    total: int
    done: int  # items with every review wanted
    leased: int  # items not done that someone holds now
    remaining: int  # items not done
    reviewers: list[ReviewerProgress]  # members, and anyone who reviewed in the queue, by username


def queue_reviewer_progress(queue: Queue) -> Progress:
    """Done, leased and remaining, for the queue and for each reviewer (its members and whoever reviewed in it):
    two queries, whatever the number of items and reviewers."""
    now = timezone.now()
    wanted = queue.reviews_per_item
    unexpired = Lease.objects.filter(item=OuterRef("pk"), expires_at__gt=now)
    counts = QueueItem.objects.filter(queue=queue).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(submitted_count__gte=wanted)),
        leased=Count("pk", filter=Q(submitted_count__lt=wanted) & Q(Exists(unexpired))),
    )
    submitted = Review.objects.filter(item__queue=queue, state=ReviewState.SUBMITTED)
    reviewed_by_them = Review.objects.filter(
        item=OuterRef("pk"), reviewer=OuterRef(OuterRef("pk")), state=ReviewState.SUBMITTED
    )
    open_items = QueueItem.objects.filter(queue=queue, submitted_count__lt=wanted).exclude(Exists(reviewed_by_them))

    def count_of[M: Model](rows: QuerySet[M]) -> Subquery:
        # COUNT as a plain function: one row, no GROUP BY (Django's Count would group by the selected columns).
        return Subquery(
            rows.order_by().annotate(n=Func(F("pk"), function="COUNT", output_field=IntegerField())).values("n")
        )

    people = (
        User.objects.filter(Q(review_queues=queue) | Q(pk__in=submitted.values("reviewer_id")))
        .distinct()
        .annotate(
            done=count_of(submitted.filter(reviewer=OuterRef("pk"))),
            leased=count_of(Lease.objects.filter(item__queue=queue, reviewer=OuterRef("pk"), expires_at__gt=now)),
            remaining=count_of(open_items),
        )
        .order_by("username")
        .values_list("username", "done", "leased", "remaining")
    )
    return Progress(
        total=counts["total"],
        done=counts["done"],
        leased=counts["leased"],
        remaining=counts["total"] - counts["done"],
        reviewers=[ReviewerProgress(*row) for row in people],
    )
