"""Team review API: a queue's items one by one, a lead's assignment and release of their slots, a reviewer's draft
and blind reviews, and a lead's resolution.

People only: a source's key gets 403 on every one of these. Writes go through `chats.services.review`, which
audits them.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from chats.api.errors import first_or_404
from chats.api.permissions import api_roles
from chats.api.review_access import (
    ERRORS,
    PersonView,
    lead_item,
    overseer_roles,
    person_of,
    valid_input,
    visible_item,
)
from chats.api.schema import BAD_REQUEST, NOT_FOUND
from chats.api.serializers.queues import AssignSerializer, LeaseSerializer, ReleasedSerializer, ReleaseSerializer
from chats.api.serializers.reviews import (
    AnswersSerializer,
    ItemReviewsSerializer,
    ResolutionInputSerializer,
    ResolutionSerializer,
    ReviewSerializer,
)
from chats.errors import InvalidInput
from chats.models import Resolution, Review
from chats.selectors.review import item_reviews
from chats.services import review as review_services


def _reviewer(username: str) -> User:
    """The person named `reviewer` (whether they work the queue is the service's decision, as on the page)."""
    user = User.objects.filter(username=username).first()
    if user is None:
        raise InvalidInput([{"path": "/reviewer", "message": "no such user"}])
    return user


def _reviews() -> QuerySet[Review]:
    return Review.objects.select_related("reviewer", "rubric_version")


def _resolutions() -> QuerySet[Resolution]:
    return Resolution.objects.select_related("lead", "rubric_version")


class ItemAssignView(PersonView):
    @extend_schema(
        operation_id="queue_item_assign",
        summary="Assign an item to a member (leads)",
        description="Holds the item for the member for a day (or the queue's lease time when longer), even "
        "over its slots, as the queue's page does. A member who has reviewed it already is refused (400).",
        request=AssignSerializer,
        responses={200: LeaseSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        found = lead_item(request, pk, item)
        data = valid_input(AssignSerializer, request.data)
        lease = review_services.item_assign(actor=person_of(request), item=found, reviewer=_reviewer(data["reviewer"]))
        return Response(LeaseSerializer(lease).data)


class ItemReleaseView(PersonView):
    @extend_schema(
        operation_id="queue_item_release",
        summary="Release an item's slots (leads)",
        description="Frees the slots held on the item: `reviewer`'s only, or every one when left out.",
        request=ReleaseSerializer,
        responses={200: ReleasedSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, item: int) -> Response:
        found = lead_item(request, pk, item)
        data = valid_input(ReleaseSerializer, request.data)
        reviewer = _reviewer(data["reviewer"]) if "reviewer" in data else None
        released = review_services.item_release(actor=person_of(request), item=found, reviewer=reviewer)
        return Response({"released": released})


class ItemDraftView(PersonView):
    @extend_schema(
        operation_id="queue_item_draft",
        summary="Your review of an item, as saved so far",
        description="The caller's own review of the item (a draft, or once submitted the review): 404 when they "
        "have saved none. Nobody reads another's draft here.",
        responses={200: ReviewSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        found = visible_item(request, pk, item)
        review = first_or_404(
            _reviews().filter(item=found, reviewer=person_of(request)), "You have saved no review of this item."
        )
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
        found = visible_item(request, pk, item)
        data = valid_input(AnswersSerializer, request.data)
        review = review_services.review_save_draft(reviewer=person_of(request), item=found, answers=data["answers"])
        review = _reviews().get(pk=review.pk)
        return Response(ReviewSerializer(review).data)


class ItemReviewsView(PersonView):
    @extend_schema(
        operation_id="queue_item_reviews",
        summary="An item's reviews, blind",
        description="A reviewer sees their own review, and the others' submitted ones only once they have "
        "submitted theirs (`hidden` counts those not shown); leads and auditors see all.",
        responses={200: ItemReviewsSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        found = visible_item(request, pk, item)
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
        found = visible_item(request, pk, item)
        data = valid_input(AnswersSerializer, request.data)
        review = review_services.review_submit(reviewer=person_of(request), item=found, answers=data["answers"])
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)


class ItemResolutionView(PersonView):
    @extend_schema(
        operation_id="queue_item_resolution",
        summary="An item's gold answer (leads and auditors)",
        responses={200: ResolutionSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, item: int) -> Response:
        overseer_roles(request, "Only leads and auditors read resolutions.")
        found = visible_item(request, pk, item)
        resolution = _resolutions().filter(item=found).first()
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
        found = lead_item(request, pk, item)
        data = valid_input(ResolutionInputSerializer, request.data)
        resolution = review_services.item_resolve(
            actor=person_of(request), item=found, answers=data["answers"], correction=data["correction"]
        )
        resolution = _resolutions().get(pk=resolution.pk)
        return Response(ResolutionSerializer(resolution).data)
