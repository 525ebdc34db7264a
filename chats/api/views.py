"""The read, feedback and export API. Views validate the query parameters and bodies, read through the selectors
(a fixed number of queries whatever the data), call the services for every write and every audited export, and
answer from the output serializers.

Errors are not caught here: invalid input, and what the services or selectors refuse (`chats.errors`), propagate
to `chats.api.errors.exception_handler`, which answers them all in the API's one error shape. What each operation
takes and answers is documented in `chats.api.schema`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from rest_framework import generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from chats.api import schema
from chats.api.authentication import SourcePrincipal
from chats.api.pagination import ConversationCursorPagination, FeedbackPagination
from chats.api.permissions import CanRead, CanReadOrReview, caller_source, scope_to_caller
from chats.api.serializers.artifacts import (
    ArtifactDetailSerializer,
    ArtifactExportQuery,
    ArtifactListQuery,
    ArtifactQuery,
    ArtifactSummarySerializer,
    ArtifactUseSerializer,
    PayloadVersionSerializer,
)
from chats.api.serializers.conversations import (
    BranchQuery,
    ConversationDetailSerializer,
    ConversationExportQuery,
    ConversationListSerializer,
)
from chats.api.serializers.exports import BulkExportQuery
from chats.api.serializers.feedback import (
    FeedbackCreateSerializer,
    FeedbackSerializer,
    FeedbackUpdateSerializer,
    LabelSerializer,
)
from chats.db_router import replica_lag_tolerated
from chats.filters.conversations import ConversationFilter
from chats.filters.feedback import FeedbackFilter
from chats.models import Conversation, Feedback, Label, Source
from chats.selectors.artifact_uses import artifact_conversations, artifact_uses
from chats.selectors.artifact_versions import artifact_versions
from chats.selectors.artifacts import ArtifactFilters, artifact_page, artifact_summaries_of
from chats.selectors.conversations import (
    conversation_list,
    conversation_one,
)
from chats.selectors.exports import bulk_export
from chats.selectors.feedback import feedback_list, feedback_target, labels_named
from chats.selectors.threads import WINDOW_SIZE
from chats.services import exports as export_services
from chats.services import feedback as feedback_services
from chats.services.audit import Actor
from chats.services.reads import conversation_detail_open


def _person(request: Request) -> User:
    """The signed-in person (the permissions let only reviewers reach the writes)."""
    user = request.user
    assert isinstance(user, User)
    return user


def _caller(request: Request) -> Actor:
    """Who is behind a request, for the audit trail: a user, or a source acting by its key."""
    return request.user


def _valid(serializer_class: type[Serializer[Any]], data: object, *, partial: bool = False) -> dict[str, Any]:
    """The validated input; anything invalid is a 400 naming each parameter or field at fault."""
    serializer = serializer_class(data=data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@replica_lag_tolerated
@schema.conversations
class ConversationViewSet(viewsets.ReadOnlyModelViewSet[Conversation]):
    permission_classes = [CanRead]
    lookup_field = "uuid"
    filter_backends = [DjangoFilterBackend]
    filterset_class = ConversationFilter
    pagination_class = ConversationCursorPagination
    serializer_class = ConversationListSerializer

    def get_queryset(self) -> QuerySet[Conversation]:
        queryset = scope_to_caller(self.request, Conversation.objects.all())
        return conversation_list(queryset) if self.action == "list" else conversation_one(queryset)

    def filter_queryset[Row](self, queryset: QuerySet[Conversation, Row]) -> QuerySet[Conversation, Row]:
        # The filters choose which conversations a list holds; they never hide the one a detail URL names.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        response = super().list(request, *args, **kwargs)
        response[schema.NOT_INDEXED_HEADER] = "0"  # deprecated: nothing waits to be indexed any more
        return response

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        query = _valid(BranchQuery, request.query_params)
        conversation = self.get_object()
        window = None
        if "after" in query or "limit" in query:  # without either: the whole thread, as clients have always read it
            window = {"after": query.get("after"), "limit": query.get("limit", WINDOW_SIZE)}
        detail = conversation_detail_open(conversation, viewer=request.user, branch=query["branch"], window=window)
        return Response(ConversationDetailSerializer(detail, context={"request": request}).data)

    @action(detail=True, methods=["get"], url_path="export", filter_backends=[], pagination_class=None)
    def export(self, request: Request, uuid: str) -> Response:
        fmt = _valid(ConversationExportQuery, request.query_params)["format"]
        conversation = self.get_object()
        result = export_services.conversation_export(actor=_caller(request), conversation=conversation, format=fmt)
        response = Response(result.document)
        response[schema.OMITTED_HEADER] = json.dumps(result.omitted, ensure_ascii=True)
        return response


def _artifact_filters(request: Request, query: Mapping[str, str], *, artifact_id: str | None = None) -> ArtifactFilters:
    """The artifact filters of a query, within what the caller may see: a source's key sees its own source only,
    and another source's name answers exactly as a name that does not exist."""
    user = request.user
    scope = user.source if isinstance(user, SourcePrincipal) else None
    source = scope
    name = query.get("source")
    if name is not None:
        source = Source.objects.filter(name=name).first()
        if source is None or (scope is not None and source.pk != scope.pk):
            raise ValidationError(
                {"source": ["Select a valid choice. That choice is not one of the available choices."]}
            )
    return ArtifactFilters(source=source, kind=query.get("kind") or None, artifact_id=artifact_id)


@replica_lag_tolerated
@schema.artifact_list
class ArtifactListView(APIView):
    permission_classes = [CanRead]

    def get(self, request: Request) -> Response:
        if "artifact_id" in request.query_params:
            # Where this list used to answer with the conversations that injected the id: they are the detail's
            # `results` now, with the same items and cursors.
            artifact_id = _valid(ArtifactQuery, request.query_params)["artifact_id"]
            kept = [(k, v) for k, v in request.query_params.items() if k in ("cursor", "page_size")]
            location = reverse("api:artifact-detail", args=[artifact_id]) + (f"?{urlencode(kept)}" if kept else "")
            return Response(status=status.HTTP_308_PERMANENT_REDIRECT, headers={"Location": location})
        query = _valid(ArtifactListQuery, request.query_params)
        page = artifact_page(_artifact_filters(request, query), sort=query["sort"], number=query["page"])
        url = request.build_absolute_uri()
        body = {
            "next": replace_query_param(url, "page", page.number + 1) if page.has_next else None,
            "previous": replace_query_param(url, "page", page.number - 1) if page.has_previous else None,
            "results": ArtifactSummarySerializer(page.artifacts, many=True).data,
        }
        return Response(body)


@replica_lag_tolerated
@schema.artifact_detail
class ArtifactDetailView(generics.GenericAPIView[Conversation]):
    permission_classes = [CanRead]
    queryset = Conversation.objects.none()  # the schema's model; get() builds the real query
    pagination_class = ConversationCursorPagination
    serializer_class = ArtifactDetailSerializer

    def get(self, request: Request, artifact_id: str) -> Response:
        if "\x00" in artifact_id:  # never an id: PostgreSQL refuses NUL in text
            raise NotFound("No such artifact.")
        filters = _artifact_filters(request, {}, artifact_id=artifact_id)
        kinds = artifact_summaries_of(filters)
        if not kinds:
            raise NotFound("No conversation you may see injected or listed this artifact.")
        versions = artifact_versions(filters)
        conversations = conversation_list(scope_to_caller(request, Conversation.objects.all()))
        page = self.paginate_queryset(artifact_conversations(conversations, artifact_id=artifact_id)) or []
        uses = ArtifactUseSerializer(artifact_uses(page, artifact_id=artifact_id), many=True).data
        body = {
            "artifact_id": artifact_id,
            "kinds": ArtifactSummarySerializer(kinds, many=True).data,
            "versions": PayloadVersionSerializer(versions, many=True).data,
            **self.get_paginated_response(uses).data,
        }
        return Response(body)


@replica_lag_tolerated
@schema.artifact_export
class ArtifactExportView(APIView):
    permission_classes = [CanRead]

    def get(self, request: Request) -> StreamingHttpResponse:
        query = _valid(ArtifactExportQuery, request.query_params)
        filters = _artifact_filters(request, query)
        lines = export_services.artifacts_export_stream(
            actor=_caller(request),
            filters=filters,
            given={key: query[key] for key in ("kind", "source") if key in query},
        )
        response = StreamingHttpResponse(lines, content_type=schema.NDJSON)
        response["Content-Disposition"] = 'attachment; filename="artifacts.ndjson"'
        return response


@schema.labels
class LabelListView(generics.ListAPIView[Label]):
    permission_classes = [CanRead]
    serializer_class = LabelSerializer
    pagination_class = None
    filter_backends: list[Any] = []
    queryset = Label.objects.all()


@schema.feedback
class FeedbackViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[Feedback],
):
    permission_classes = [CanReadOrReview]
    lookup_field = "uuid"
    filter_backends = [DjangoFilterBackend]
    filterset_class = FeedbackFilter
    pagination_class = FeedbackPagination
    serializer_class = FeedbackSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Feedback]:
        return feedback_list(scope_to_caller(self.request, Feedback.objects.all(), source_field="conversation__source"))

    def _answer(self, feedback: Feedback, code: int) -> Response:
        fresh = self.get_queryset().get(pk=feedback.pk)
        return Response(FeedbackSerializer(fresh).data, status=code)

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        values = _valid(FeedbackCreateSerializer, request.data)
        conversation, message = feedback_target(
            scope_to_caller(request, Conversation.objects.all()),
            conversation=values["conversation"],
            message_key=values["message"],
        )
        feedback, created = feedback_services.feedback_submit(
            author=_person(request),
            conversation=conversation,
            message=message,
            score=values["score"],
            labels=labels_named(values["labels"]),
            comment=values["comment"],
            correction=values["correction"],
        )
        return self._answer(feedback, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        feedback = self.get_object()
        values = _valid(FeedbackUpdateSerializer, request.data, partial=True)
        # Before the body's labels are read: someone else's feedback is refused whatever the request says.
        feedback_services.feedback_ensure_owner(_person(request), feedback)
        labels = labels_named(values["labels"]) if "labels" in values else list(feedback.labels.all())
        feedback_services.feedback_update(
            actor=_person(request),
            feedback=feedback,
            score=values.get("score", feedback.score),
            labels=labels,
            comment=values.get("comment", feedback.comment),
            correction=values.get("correction", feedback.correction),
        )
        return self._answer(feedback, status.HTTP_200_OK)

    def destroy(self, request: Request, *args: object, **kwargs: object) -> Response:
        feedback_services.feedback_delete(actor=_person(request), feedback=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@replica_lag_tolerated
@schema.bulk_export
class BulkExportView(APIView):
    permission_classes = [CanRead]

    def get(self, request: Request) -> StreamingHttpResponse:
        query = _valid(BulkExportQuery, request.query_params)
        export = bulk_export(
            request.query_params,
            format=query["format"],
            reader=request.user if isinstance(request.user, User) else None,
            envelope=query["envelope"],
            source=caller_source(request),
        )
        if not export.filterset.is_valid():
            raise translate_validation(export.filterset.errors)
        chunks = export_services.bulk_export_stream(actor=_caller(request), export=export)
        response = StreamingHttpResponse(chunks, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        return response
