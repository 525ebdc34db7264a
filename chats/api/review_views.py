"""Team review API: queues, their items and progress, "next item" and their agreement figures.

People only: a source's key gets 403 on every one of these. Leads (and superusers) create queues and add
conversations; the members of a queue lease its items; auditors read everything. Writes go through
`chats.services.review`, which audits them. A queue's items one by one are in `chats.api.review_item_views`, its
rules in `chats.api.review_rule_views`.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django_filters.utils import translate_validation
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from chats.api.errors import refuse_missing
from chats.api.pagination import QueueItemPagination
from chats.api.permissions import api_roles
from chats.api.review_access import (
    ERRORS,
    PersonView,
    lead_roles,
    overseer_roles,
    person_of,
    users_named,
    valid_input,
    visible_queue,
)
from chats.api.schema import BAD_REQUEST, NOT_FOUND
from chats.api.serializers.queues import (
    ItemsAddedSerializer,
    ItemsAddSerializer,
    ItemStateQuery,
    ProgressSerializer,
    QueueCreateSerializer,
    QueueItemSerializer,
    QueuePatchSerializer,
    QueueSerializer,
)
from chats.api.serializers.reviews import AgreementSerializer
from chats.errors import InvalidInput
from chats.filters.conversations import ConversationFilter
from chats.models import Conversation
from chats.review.agreement import MIN_ITEMS
from chats.selectors.review import (
    current_rubric,
    item_state_condition,
    item_state_counts,
    queue_agreement,
    queue_items,
    queue_reviewer_progress,
    queue_visible,
    queues_visible,
    state_scope,
)
from chats.services import review as review_services


class QueueListView(PersonView):
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
        lead_roles(request)
        data = valid_input(QueueCreateSerializer, request.data)
        members = users_named(data["members"])
        queue = review_services.queue_create(
            actor=person_of(request),
            name=data["name"],
            instructions=data["instructions"],
            reviews_per_item=data["reviews_per_item"],
            questions=data["questions"],
            members=members,
        )
        detail = queue_visible(request.user, api_roles(request), queue.pk, detail=True)
        return Response(QueueSerializer(detail).data, status=status.HTTP_201_CREATED)


class QueueDetailView(PersonView):
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
        roles = lead_roles(request)
        queue = visible_queue(request, pk)
        data = valid_input(QueuePatchSerializer, request.data)
        members = users_named(data["members"]) if "members" in data else None
        with transaction.atomic():
            review_services.queue_update(
                actor=person_of(request),
                queue=queue,
                name=data.get("name"),
                instructions=data.get("instructions"),
                reviews_per_item=data.get("reviews_per_item"),
                questions=data.get("questions"),
                members=members,
            )
            if "lease_minutes" in data:
                review_services.queue_set_lease_minutes(
                    actor=person_of(request), queue=queue, lease_minutes=data["lease_minutes"]
                )
        return Response(QueueSerializer(queue_visible(request.user, roles, pk, detail=True)).data)


class QueueProgressView(PersonView):
    @extend_schema(
        operation_id="queue_progress",
        summary="A queue's progress",
        description="Items done, leased and remaining, the items in each state, and per reviewer (the members, "
        "and whoever reviewed in the queue) the reviews done, the items leased and those remaining for them. "
        "Counts only: no answer is shown.",
        responses={200: ProgressSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        queue = visible_queue(request, pk)
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


class QueueItemListView(PersonView):
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
        queue = visible_queue(request, pk)
        state = valid_input(ItemStateQuery, request.query_params).get("state")
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
        lead_roles(request)
        queue = visible_queue(request, pk)
        data = valid_input(ItemsAddSerializer, request.data)
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
            refuse_missing("conversations", wanted, found, "no such conversation")
        added = review_services.queue_add_conversations(
            actor=person_of(request), queue=queue, conversations=conversations
        )
        return Response({"added": added})


class QueueNextView(PersonView):
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
        queue = visible_queue(request, pk)
        item = review_services.item_lease_next(queue=queue, reviewer=person_of(request))
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(QueueItemSerializer(queue_items(queue).get(pk=item.pk)).data)


class QueueAgreementView(PersonView):
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
        overseer_roles(request, "Only leads and auditors read agreement figures.")
        queue = visible_queue(request, pk)
        rubric = current_rubric(queue)
        questions = [
            {"key": group.key, "prompt": group.prompt, "versions": group.versions, "current": group.current}
            | group.figure.as_dict()
            for group in queue_agreement(queue)
        ]
        payload = {"queue": queue.pk, "rubric_version": rubric.version, "min_items": MIN_ITEMS, "questions": questions}
        return Response(AgreementSerializer(payload).data)
