"""Team review API: queues, their rules, their items, "next item", blind reviews and a lead's resolution.

People only: a source's key gets 403 on every one of these. Leads (and superusers) create queues, add
conversations, manage their rules and resolve items; the members of a queue lease its items and review them;
auditors read everything (rules included, which reviewers do not see). Writes go through `chats.services.review`
and `chats.services.queue_rules`, which audit them.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django_filters.utils import translate_validation
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chats.api.authentication import SourcePrincipal
from chats.api.pagination import QueueItemPagination
from chats.api.permissions import api_roles
from chats.api.schema import BAD_REQUEST, NOT_FOUND, error
from chats.api.serializers.queue_rules import (
    QueueRuleInputSerializer,
    QueueRulePatchSerializer,
    QueueRuleRunSerializer,
    QueueRuleSerializer,
)
from chats.api.serializers.queues import (
    AssignSerializer,
    ItemsAddedSerializer,
    ItemsAddSerializer,
    ItemStateQuery,
    LeaseSerializer,
    ProgressSerializer,
    QueueCreateSerializer,
    QueueItemSerializer,
    QueuePatchSerializer,
    QueueSerializer,
    ReleasedSerializer,
    ReleaseSerializer,
)
from chats.api.serializers.reviews import (
    AgreementSerializer,
    AnswersSerializer,
    ItemReviewsSerializer,
    ResolutionInputSerializer,
    ResolutionSerializer,
    ReviewSerializer,
)
from chats.errors import InvalidInput
from chats.filters.conversations import ConversationFilter
from chats.models import Conversation, Queue, QueueRule, QueueRuleRun, Resolution, Review
from chats.review.agreement import MIN_ITEMS
from chats.roles import Roles, lead_required
from chats.selectors.review import (
    current_rubric,
    item_reviews,
    item_state_condition,
    item_state_counts,
    queue_agreement,
    queue_item,
    queue_items,
    queue_reviewer_progress,
    queue_visible,
    queues_visible,
    state_scope,
)
from chats.services import queue_rules as rule_services
from chats.services import review as review_services

ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("A source's key, or a person without the role this needs (or not a member of the queue)."),
}


class IsPerson(permissions.BasePermission):
    """A signed-in person with a role (reading, or leading); a source's key is refused."""

    message = "Team review is for people with the Reviewers, Auditors or Leads role, not for a source's key."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated) or isinstance(user, SourcePrincipal):
            return False
        roles = api_roles(request)
        return roles.can_read or roles.can_lead


def _person(request: Request) -> User:
    user = request.user
    assert isinstance(user, User)
    return user


def _lead(request: Request) -> Roles:
    """The services refuse anyone but a lead (`lead_required`); asked first here, so that the refusal comes before
    the input's errors."""
    roles = api_roles(request)
    lead_required(roles)
    return roles


def _valid(serializer_class: type[Any], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _queue(request: Request, pk: int) -> Queue:
    return queue_visible(request.user, api_roles(request), pk)


class QueueListView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queues_list",
        summary="List review queues",
        description="Every queue for leads and auditors; the queues a reviewer works, for a reviewer.",
        responses={200: QueueSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queues = queues_visible(request.user, api_roles(request))
        return Response(QueueSerializer(queues, many=True).data)

    @extend_schema(
        operation_id="queues_create",
        summary="Create a review queue (leads)",
        description="A queue with its rubric's first version. Members are named by username.",
        request=QueueCreateSerializer,
        responses={201: QueueSerializer, **BAD_REQUEST, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        _lead(request)
        data = _valid(QueueCreateSerializer, request.data)
        members = list(User.objects.filter(username__in=data["members"]))
        unknown = sorted(set(data["members"]) - {member.username for member in members})
        if unknown:
            raise InvalidInput([{"path": "/members", "message": f"no such user: {', '.join(unknown)}"}])
        queue = review_services.queue_create(
            actor=_person(request),
            name=data["name"],
            instructions=data["instructions"],
            reviews_per_item=data["reviews_per_item"],
            questions=data["questions"],
            members=members,
        )
        detail = queue_visible(request.user, api_roles(request), queue.pk, detail=True)
        return Response(QueueSerializer(detail).data, status=status.HTTP_201_CREATED)


class QueueDetailView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queues_retrieve",
        summary="A review queue",
        description="Its settings, members and current rubric, for whoever sees the queue.",
        responses={200: QueueSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(QueueSerializer(queue_visible(request.user, api_roles(request), pk, detail=True)).data)

    @extend_schema(
        operation_id="queues_update",
        summary="Change a review queue (leads)",
        description="Only the fields given change, all or none of them. Changed questions make a new rubric "
        "version when reviews were given under the current one (they keep theirs); `members` replaces the list; "
        "`lease_minutes` applies to the leases given from now on.",
        request=QueuePatchSerializer,
        responses={200: QueueSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def patch(self, request: Request, pk: int) -> Response:
        roles = _lead(request)
        queue = _queue(request, pk)
        data = _valid(QueuePatchSerializer, request.data)
        members = None
        if "members" in data:
            members = list(User.objects.filter(username__in=data["members"]))
            unknown = sorted(set(data["members"]) - {member.username for member in members})
            if unknown:
                raise InvalidInput([{"path": "/members", "message": f"no such user: {', '.join(unknown)}"}])
        with transaction.atomic():
            review_services.queue_update(
                actor=_person(request),
                queue=queue,
                name=data.get("name"),
                instructions=data.get("instructions"),
                reviews_per_item=data.get("reviews_per_item"),
                questions=data.get("questions"),
                members=members,
            )
            if "lease_minutes" in data:
                review_services.queue_set_lease_minutes(
                    actor=_person(request), queue=queue, lease_minutes=data["lease_minutes"]
                )
        return Response(QueueSerializer(queue_visible(request.user, roles, pk, detail=True)).data)


class QueueProgressView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_progress",
        summary="A queue's progress",
        description="Items done, leased and remaining, the items in each state, and per reviewer (the members, "
        "and whoever reviewed in the queue) the reviews done, the items leased and those remaining for them. "
        "Counts only: no answer is shown.",
        responses={200: ProgressSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        queue = _queue(request, pk)
        progress = queue_reviewer_progress(queue)
        payload = {
            "queue": queue.pk,
            "total": progress.total,
            "done": progress.done,
            "leased": progress.leased,
            "remaining": progress.remaining,
            "states": item_state_counts(state_scope(queue)),
            "reviewers": progress.reviewers,
        }
        return Response(ProgressSerializer(payload).data)


class QueueItemListView(APIView):
    permission_classes = [IsPerson]
    pagination_class = QueueItemPagination  # read by the schema, which documents the page as it is sent

    @extend_schema(
        operation_id="queue_items_list",
        summary="List a queue's items",
        description="Oldest first, a page at a time by cursor (`results`, with `next` and `previous` links), "
        "those in `state` only when it is given. No answers are shown here.",
        parameters=[ItemStateQuery],
        responses={200: QueueItemSerializer(many=True), **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        queue = _queue(request, pk)
        state = _valid(ItemStateQuery, request.query_params).get("state")
        items = queue_items(queue)
        if state is not None:  # the scope reads the rubric: only when a state asks for it
            items = items.filter(item_state_condition(state_scope(queue), state))
        paginator = QueueItemPagination()
        page = paginator.paginate_queryset(items, request, view=self)
        return paginator.get_paginated_response(QueueItemSerializer(page, many=True).data)

    @extend_schema(
        operation_id="queue_items_add",
        summary="Add conversations to a queue (leads)",
        description="Either `conversations` (uuids) or `filters` (the conversation list's filters, applied by the "
        "same FilterSet, set-based). Conversations already in the queue are left as they are.",
        request=ItemsAddSerializer,
        responses={200: ItemsAddedSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int) -> Response:
        _lead(request)
        queue = _queue(request, pk)
        data = _valid(ItemsAddSerializer, request.data)
        conversations: QuerySet[Conversation]
        if "filters" in data:
            filterset = ConversationFilter(data["filters"], queryset=Conversation.objects.all(), request=request)
            if not filterset.is_valid():
                raise InvalidInput(
                    [
                        {"path": f"/filters/{name}", "message": str(message)}
                        for name, messages in translate_validation(filterset.errors).detail.items()
                        for message in messages
                    ]
                )
            conversations = filterset.qs
        else:
            wanted = data["conversations"]
            conversations = Conversation.objects.filter(uuid__in=wanted)
            found = set(conversations.values_list("uuid", flat=True))
            missing = [
                {"path": f"/conversations/{index}", "message": "no such conversation"}
                for index, uuid in enumerate(wanted)
                if uuid not in found
            ]
            if missing:
                raise InvalidInput(missing)
        added = review_services.queue_add_conversations(
            actor=_person(request), queue=queue, conversations=conversations
        )
        return Response({"added": added})


class QueueNextView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_next",
        summary="Lease the next item (members)",
        description="The item the caller holds, or else the oldest that still needs reviews and that they have not "
        "reviewed, held for them for the queue's `lease_minutes` (30 unless a lead changed it). 204 when there is "
        "none.",
        request=None,
        responses={
            200: QueueItemSerializer,
            204: OpenApiResponse(description="Nothing left for the caller."),
            **ERRORS,
            **NOT_FOUND,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        queue = _queue(request, pk)
        item = review_services.item_lease_next(queue=queue, reviewer=_person(request))
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(QueueItemSerializer(queue_items(queue).get(pk=item.pk)).data)


def _reviewer(username: str) -> User:
    """The person named `reviewer` (whether they work the queue is the service's decision, as on the page)."""
    user = User.objects.filter(username=username).first()
    if user is None:
        raise InvalidInput([{"path": "/reviewer", "message": "no such user"}])
    return user


class ItemAssignView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_item_assign",
        summary="Assign an item to a member (leads)",
        description="Holds the item for the member for a day (or the queue's lease time when longer), even "
        "over its slots, as the queue's page does. A member who has reviewed it already is refused (400).",
        request=AssignSerializer,
        responses={200: LeaseSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        _lead(request)
        found = queue_item(_queue(request, pk), item)
        data = _valid(AssignSerializer, request.data)
        lease = review_services.item_assign(actor=_person(request), item=found, reviewer=_reviewer(data["reviewer"]))
        return Response(LeaseSerializer(lease).data)


class ItemReleaseView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_item_release",
        summary="Release an item's slots (leads)",
        description="Frees the slots held on the item: `reviewer`'s only, or every one when left out.",
        request=ReleaseSerializer,
        responses={200: ReleasedSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        _lead(request)
        found = queue_item(_queue(request, pk), item)
        data = _valid(ReleaseSerializer, request.data)
        reviewer = _reviewer(data["reviewer"]) if "reviewer" in data else None
        released = review_services.item_release(actor=_person(request), item=found, reviewer=reviewer)
        return Response({"released": released})


class ItemDraftView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_item_draft",
        summary="Your review of an item, as saved so far",
        description="The caller's own review of the item (a draft, or once submitted the review): 404 when they "
        "have saved none. Nobody reads another's draft here.",
        responses={200: ReviewSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        found = queue_item(_queue(request, pk), item)
        review = (
            Review.objects.select_related("reviewer", "rubric_version")
            .filter(item=found, reviewer=_person(request))
            .first()
        )
        if review is None:
            raise Http404("You have saved no review of this item.")
        return Response(ReviewSerializer(review).data)

    @extend_schema(
        operation_id="queue_item_draft_save",
        summary="Save your answers so far (members)",
        description="Any subset of the current rubric's questions, checked as a submission is; saving again "
        "replaces them. A submitted review is not a draft any more (400).",
        request=AnswersSerializer,
        responses={200: ReviewSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def put(self, request: Request, pk: int, item: int) -> Response:
        found = queue_item(_queue(request, pk), item)
        data = _valid(AnswersSerializer, request.data)
        review = review_services.review_save_draft(reviewer=_person(request), item=found, answers=data["answers"])
        review = Review.objects.select_related("reviewer", "rubric_version").get(pk=review.pk)
        return Response(ReviewSerializer(review).data)


class ItemReviewsView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_item_reviews",
        summary="An item's reviews, blind",
        description="A reviewer sees their own review, and the others' submitted ones only once they have "
        "submitted theirs (`hidden` counts those not shown); leads and auditors see all.",
        responses={200: ItemReviewsSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        found = queue_item(_queue(request, pk), item)
        visible = item_reviews(found, request.user, api_roles(request))
        return Response(ItemReviewsSerializer({"reviews": visible.reviews, "hidden": visible.hidden}).data)

    @extend_schema(
        operation_id="queue_item_review_submit",
        summary="Submit a review (members)",
        description="Answers to the queue's current rubric, every question but the text ones. Once per item.",
        request=AnswersSerializer,
        responses={201: ReviewSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        found = queue_item(_queue(request, pk), item)
        data = _valid(AnswersSerializer, request.data)
        review = review_services.review_submit(reviewer=_person(request), item=found, answers=data["answers"])
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)


class ItemResolutionView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_item_resolution",
        summary="An item's gold answer (leads and auditors)",
        responses={200: ResolutionSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        roles = api_roles(request)
        if not roles.can_oversee:
            raise PermissionDenied("Only leads and auditors read resolutions.")
        found = queue_item(_queue(request, pk), item)
        resolution = Resolution.objects.select_related("lead", "rubric_version").filter(item=found).first()
        if resolution is None:
            return Response({"errors": [{"path": "", "message": "Not resolved yet."}]}, status=404)
        return Response(ResolutionSerializer(resolution).data)

    @extend_schema(
        operation_id="queue_item_resolve",
        summary="Resolve an item (leads)",
        description="The gold answer per question (every question but the text ones) and the final correction; "
        "resolving again replaces it.",
        request=ResolutionInputSerializer,
        responses={200: ResolutionSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        _lead(request)
        found = queue_item(_queue(request, pk), item)
        data = _valid(ResolutionInputSerializer, request.data)
        resolution = review_services.item_resolve(
            actor=_person(request), item=found, answers=data["answers"], correction=data["correction"]
        )
        resolution = Resolution.objects.select_related("lead", "rubric_version").get(pk=resolution.pk)
        return Response(ResolutionSerializer(resolution).data)


class QueueAgreementView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_agreement",
        summary="Agreement per question (leads and auditors)",
        description="Per question, over submitted reviews: Krippendorff's `alpha` (nominal or ordinal as the type "
        "says; per label for multi-label; for ordinal questions also `alpha_interval`), and for each pair of "
        "reviewers Cohen's `kappa` (for ordinal questions also `kappa_linear` and `kappa_quadratic`) and "
        "`percent_agreement`, with the counts behind each figure. Answers are compared only with answers to the "
        "same question: `versions` lists the rubric versions in which it was the same; a question whose type, "
        "options or scale changed has one entry per form. A question on a kind of message counts each (item, "
        "message) as a unit. Reviewers are refused: the figures would tell them others' answers.",
        responses={200: AgreementSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        roles = api_roles(request)
        if not roles.can_oversee:
            raise PermissionDenied("Only leads and auditors read agreement figures.")
        queue = _queue(request, pk)
        rubric = current_rubric(queue)
        questions = [
            {"key": group.key, "prompt": group.prompt, "versions": group.versions, "current": group.current}
            | group.figure.as_dict()
            for group in queue_agreement(queue)
        ]
        payload = {"queue": queue.pk, "rubric_version": rubric.version, "min_items": MIN_ITEMS, "questions": questions}
        return Response(AgreementSerializer(payload).data)


def _rule_reader(request: Request) -> None:
    roles = api_roles(request)
    if not roles.can_oversee:
        raise PermissionDenied("Only leads and auditors read a queue's rules.")


def _rule(queue: Queue, pk: int) -> QueueRule:
    rule = QueueRule.objects.select_related("queue", "created_by").filter(queue=queue, pk=pk).first()
    if rule is None:
        raise Http404("No such rule in this queue.")
    return rule


def _rule_out(rule: QueueRule) -> dict[str, Any]:
    return dict(QueueRuleSerializer(_rule(rule.queue, rule.pk)).data)


class QueueRuleListView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_rules_list",
        summary="List a queue's rules (leads and auditors)",
        description="Each rule: the conversation list's filters and a sampling rate. Enabled rules add the "
        "matching conversations they sample as they are ingested.",
        responses={200: QueueRuleSerializer(many=True), **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        _rule_reader(request)
        rules = QueueRule.objects.filter(queue=_queue(request, pk)).select_related("created_by").order_by("name", "id")
        return Response(QueueRuleSerializer(rules, many=True).data)

    @extend_schema(
        operation_id="queue_rules_create",
        summary="Create a queue rule (leads)",
        description="Filters invalid for the conversation list answer 400, naming the parameter "
        "(`/filters/<name>`). The rule applies to conversations ingested from now on; run it to apply it to what "
        "is stored.",
        request=QueueRuleInputSerializer,
        responses={201: QueueRuleSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int) -> Response:
        _lead(request)
        queue = _queue(request, pk)
        data = _valid(QueueRuleInputSerializer, request.data)
        rule = rule_services.rule_create(actor=_person(request), queue=queue, **data)
        return Response(_rule_out(rule), status=status.HTTP_201_CREATED)


class QueueRuleDetailView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_rules_update",
        summary="Change a queue rule (leads)",
        description="Only the fields given change; filters are checked as on creation.",
        request=QueueRulePatchSerializer,
        responses={200: QueueRuleSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def patch(self, request: Request, pk: int, rule: int) -> Response:
        _lead(request)
        found = _rule(_queue(request, pk), rule)
        data = _valid(QueueRulePatchSerializer, request.data)
        rule_services.rule_update(actor=_person(request), rule=found, **data)
        return Response(_rule_out(found))

    @extend_schema(
        operation_id="queue_rules_delete",
        summary="Delete a queue rule (leads)",
        description="The conversations it added stay in the queue.",
        responses={204: OpenApiResponse(description="Deleted."), **ERRORS, **NOT_FOUND},
    )
    def delete(self, request: Request, pk: int, rule: int) -> Response:
        _lead(request)
        found = _rule(_queue(request, pk), rule)
        rule_services.rule_delete(actor=_person(request), rule=found)
        return Response(status=status.HTTP_204_NO_CONTENT)


class QueueRuleRunView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_rules_run",
        summary="Run a queue rule over what is stored (leads)",
        description="Queues a run of the rule, carried out by a worker, and answers 202 with its record (poll its "
        "`url`). The run adds the stored conversations the rule matches and samples that the queue lacks; running "
        "it again adds none (the sample is a stable hash). A rule whose filters no longer validate answers 400.",
        request=None,
        responses={202: QueueRuleRunSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, rule: int) -> Response:
        _lead(request)
        found = _rule(_queue(request, pk), rule)
        run = rule_services.rule_run_request(actor=_person(request), rule=found)
        body = QueueRuleRunSerializer(_rule_run(found, run.pk)).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


def _rule_run(rule: QueueRule, pk: int) -> QueueRuleRun:
    run = QueueRuleRun.objects.select_related("rule", "requested_by").filter(rule=rule, pk=pk).first()
    if run is None:
        raise Http404("No such run of this rule.")
    return run


class QueueRuleRunDetailView(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="queue_rules_run_retrieve",
        summary="A run of a queue rule (leads and auditors)",
        description="Its state (queued, running, done, failed), how many conversations it added once done, and "
        "why it failed.",
        responses={200: QueueRuleRunSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, rule: int, run: int) -> Response:
        _rule_reader(request)
        return Response(QueueRuleRunSerializer(_rule_run(_rule(_queue(request, pk), rule), run)).data)
