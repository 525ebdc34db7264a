"""The read, feedback and export API. Views translate parameters, read with a fixed number of queries, call the
services for every write and every audited export, and answer from the output serializers."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, F, OuterRef, QuerySet
from django.http import QueryDict, StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, generics, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import BasePagination, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from chats import exporting, selectors, services
from chats.api import serializers
from chats.api.errors import errors_response
from chats.api.filters import FeedbackFilter
from chats.api.permissions import CanRead, CanReadOrReview, scope_to_caller
from chats.api.schema import BAD_REQUEST, NOT_FOUND, READ_ERRORS, conversation_filter_parameters, error
from chats.export import FORMATS, export_conversation
from chats.filters import ConversationFilter
from chats.models import (
    Conversation,
    Feedback,
    FeedbackLabel,
    InjectedArtifact,
    Label,
    Message,
    ToolCall,
)

TRAINING = exporting.TRAINING
NDJSON = "application/x-ndjson"
OMITTED_HEADER = "X-Export-Omitted"
# Heavy columns the list never shows.
LIST_DEFERRED = ("search_vector", "metadata", "scenario", "injection_context", "model_config", "context_pairs")


def _person(request: Request) -> Any:
    """The signed-in person (the permissions let only reviewers reach the writes)."""
    user = request.user
    assert isinstance(user, AbstractBaseUser)
    return user


def _caller(request: Request) -> Any:
    """Who is behind a request, for the audit trail: a user, or a source acting by its key."""
    return request.user


def _bad_parameter(name: str, message: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({name: [message]})


# --------------------------------------------------------------------------------------------------------------
# Pagination: keyset on (last_activity_at, id), shared with the review pages (selectors.conversation_page)


class ConversationCursorPagination(BasePagination):
    """Newest first by (last_activity_at, id). A cursor names a row, not an offset: conversations that arrive
    while a client pages neither repeat a row nor make it skip one."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    page_size = selectors.PAGE_SIZE
    max_page_size = 200

    def paginate_queryset(  # type: ignore[override]
        self, queryset: QuerySet[Conversation], request: Request, view: Any = None
    ) -> list[Conversation]:
        self.request = request
        size = self._page_size(request)
        after = before = None
        cursor = request.query_params.get(self.cursor_query_param)
        if cursor:
            direction, _, token = cursor.partition(".")
            if direction not in ("n", "p") or selectors.decode_cursor(token) is None:
                raise _bad_parameter(self.cursor_query_param, "not a cursor this API gave out")
            after, before = (token, None) if direction == "n" else (None, token)
        self.page = selectors.conversation_page(queryset, after=after, before=before, size=size)
        return self.page.conversations

    def _page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None or raw == "":
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            raise _bad_parameter(self.page_size_query_param, "must be an integer") from None
        if not 1 <= size <= self.max_page_size:
            raise _bad_parameter(self.page_size_query_param, f"must be between 1 and {self.max_page_size}")
        return size

    def _link(self, token: str | None, direction: str) -> str | None:
        if token is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.cursor_query_param, f"{direction}.{token}")

    def get_paginated_response(self, data: Any) -> Response:
        return Response(
            {
                "next": self._link(self.page.next_cursor, "n"),
                "previous": self._link(self.page.previous_cursor, "p"),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "next": {"type": "string", "format": "uri", "nullable": True},
                "previous": {"type": "string", "format": "uri", "nullable": True},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "in": "query",
                "required": False,
                "description": "An opaque cursor from a page's `next` or `previous` link.",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "in": "query",
                "required": False,
                "description": f"Conversations per page (1 to {self.max_page_size}, default {self.page_size}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
            },
        ]


class FeedbackPagination(CursorPagination):
    ordering = "-id"
    page_size = 100

    def decode_cursor(self, request: Request) -> Any:
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            # A malformed parameter, like every other: 400 naming it (DRF answers 404).
            raise _bad_parameter(self.cursor_query_param, "not a cursor this API gave out") from None


# --------------------------------------------------------------------------------------------------------------
# Conversations


def _branch_param(request: Request) -> str:
    branch = request.query_params.get("branch") or "active"
    if branch not in ("active", "all"):
        raise _bad_parameter("branch", "must be active or all")
    return branch


def conversation_detail_read(conversation: Conversation, *, branch: str) -> Conversation:
    """Attach the messages (the active path, or every branch), their tool calls, the artifacts and the feedback:
    five queries whatever the conversation's size."""
    rows = Message.objects.filter(conversation=conversation).defer("raw")
    rows = rows.filter(on_active_path=True).order_by("depth") if branch == "active" else rows.order_by("position")
    messages = list(rows)
    key_of = {message.pk: message.key for message in messages}
    calls_of: dict[int, list[ToolCall]] = defaultdict(list)
    call_rows = ToolCall.objects.filter(conversation=conversation).order_by("message_id", "index", "id")
    if branch == "active":
        call_rows = call_rows.filter(message__on_active_path=True)
    # A result outside the listed messages (another branch) is still named by its key.
    call_rows = call_rows.annotate(result_key=F("result_message__key"))
    call_ids: dict[int, str] = {}
    for call in call_rows:
        call.result_message_key = call.result_key  # type: ignore[attr-defined]
        calls_of[call.message_id].append(call)
        call_ids[call.pk] = call.call_id
    for message in messages:
        message.parent_key = key_of.get(message.parent_id) if message.parent_id else None  # type: ignore[attr-defined]
        message.call_list = calls_of.get(message.pk, [])  # type: ignore[attr-defined]

    artifacts = []
    for artifact in InjectedArtifact.objects.filter(conversation=conversation, message_id__in=list(key_of)).order_by(
        "id"
    ):
        artifact.message_key = key_of[artifact.message_id]  # type: ignore[attr-defined]
        artifact.tool_call_id_text = call_ids.get(artifact.tool_call_id, "")  # type: ignore[attr-defined]
        artifacts.append(artifact)

    feedback = []
    for entry in (
        Feedback.objects.filter(conversation=conversation)
        .select_related("author")
        .prefetch_related("labels")
        .order_by("created_at", "id")
    ):
        if entry.message_id is not None and entry.message_id not in key_of:
            continue
        entry.conversation_uuid = conversation.uuid  # type: ignore[attr-defined]
        entry.message_key = key_of.get(entry.message_id) if entry.message_id else None  # type: ignore[attr-defined]
        entry.author_username = entry.author.get_username() if entry.author else None  # type: ignore[attr-defined]
        feedback.append(entry)

    conversation.branch = branch  # type: ignore[attr-defined]
    conversation.message_list = messages  # type: ignore[attr-defined]
    conversation.artifact_list = [_artifact_view(a) for a in artifacts]  # type: ignore[attr-defined]
    conversation.feedback_list = feedback  # type: ignore[attr-defined]
    return conversation


def _artifact_view(artifact: InjectedArtifact) -> dict[str, Any]:
    return {
        "kind": artifact.kind,
        "artifact_id": artifact.artifact_id,
        "id_well_formed": artifact.id_well_formed,
        "tool_name": artifact.tool_name,
        "tool_call_id": artifact.tool_call_id_text,  # type: ignore[attr-defined]
        "message_key": artifact.message_key,  # type: ignore[attr-defined]
        "requested": artifact.requested,
        "resolved": artifact.resolved,
        "payload": artifact.payload,
    }


EXPORT_FORMAT_PARAMETER = OpenApiParameter(
    "format", str, enum=list(FORMATS), required=True, description="The format to export in (see formats.md)."
)


@extend_schema_view(
    list=extend_schema(
        operation_id="conversations_list",
        summary="List conversations",
        description="Newest first (by last activity, then id), with the same filters as the review pages and "
        "full-text `q`. Cursor pagination: follow `next` and `previous`.",
        responses={200: serializers.ConversationListSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    ),
    retrieve=extend_schema(
        operation_id="conversations_retrieve",
        summary="Read a conversation",
        description="The conversation with its messages along the active path (`?branch=all`: every branch, in "
        "order of arrival), each with its tool calls (linked to the tool message answering them), the injected "
        "artifacts, and the feedback on the listed messages and on the conversation.",
        parameters=[
            OpenApiParameter(
                "branch", str, enum=["active", "all"], description="active (default): the active path; all: the tree."
            )
        ],
        responses={200: serializers.ConversationDetailSerializer, **BAD_REQUEST, **READ_ERRORS, **NOT_FOUND},
    ),
)
class ConversationViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [CanRead]
    lookup_field = "uuid"
    filter_backends = [DjangoFilterBackend]
    filterset_class = ConversationFilter
    pagination_class = ConversationCursorPagination
    serializer_class = serializers.ConversationListSerializer

    def get_queryset(self) -> QuerySet[Conversation]:
        queryset = scope_to_caller(self.request, Conversation.objects.select_related("source"))
        if self.action == "list":
            queryset = queryset.defer(*LIST_DEFERRED)
        return queryset.defer("search_vector")

    def filter_queryset(self, queryset: QuerySet[Conversation]) -> QuerySet[Conversation]:  # type: ignore[override]
        # The filters choose which conversations a list holds; they never hide the one a detail URL names.
        if self.action != "list":
            return queryset
        return super().filter_queryset(queryset)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        branch = _branch_param(request)
        conversation = conversation_detail_read(self.get_object(), branch=branch)
        return Response(serializers.ConversationDetailSerializer(conversation).data)

    @extend_schema(
        operation_id="conversations_export",
        summary="Export a conversation in any format",
        description="The conversation as a document of `format`. In the format it arrived in, the document is "
        "equivalent to what was received. A format that cannot hold part of the conversation (branches in a "
        "linear format, tool calls in a chat graph, ...) gets the active path, and the response header "
        f"`{OMITTED_HEADER}` lists what was left out as a JSON array of notes (`[]` when nothing was).",
        parameters=[
            EXPORT_FORMAT_PARAMETER,
            OpenApiParameter(
                OMITTED_HEADER,
                str,
                location=OpenApiParameter.HEADER,
                response=[200],
                description="What the format could not hold, as a JSON array of notes; `[]` when nothing.",
            ),
        ],
        responses={
            200: OpenApiResponse(
                OpenApiTypes.ANY,
                description="The exported document (a JSON array for `openai`, an object otherwise).",
            ),
            **BAD_REQUEST,
            **READ_ERRORS,
            **NOT_FOUND,
        },
    )
    @action(detail=True, methods=["get"], url_path="export", filter_backends=[], pagination_class=None)
    def export(self, request: Request, uuid: str) -> Response:
        fmt = request.query_params.get("format") or ""
        if fmt not in FORMATS:
            raise _bad_parameter("format", f"must be one of {', '.join(FORMATS)}")
        conversation = self.get_object()
        result = export_conversation(exporting.conversation_to_canonical(conversation, branch="all"), fmt)
        services.export_record(
            actor=_caller(request),
            what="conversation",
            format=fmt,
            filters={},
            count=1,
            conversation_uuid=conversation.uuid,
        )
        response = Response(result.document)
        response[OMITTED_HEADER] = json.dumps(result.omitted, ensure_ascii=True)
        return response


# --------------------------------------------------------------------------------------------------------------
# Artifacts


class ArtifactUsesView(generics.GenericAPIView):
    permission_classes = [CanRead]
    queryset = Conversation.objects.none()  # the schema's model; get() builds the real query
    pagination_class = ConversationCursorPagination
    serializer_class = serializers.ArtifactUseSerializer

    @extend_schema(
        operation_id="artifacts_conversations",
        summary="Where an artifact was injected",
        description="The conversations an artifact (protocol, record, discussion, ...) was injected into, newest "
        "first, each with the injections that brought it in and its feedback summary and label counts.",
        parameters=[
            OpenApiParameter("artifact_id", str, required=True, description="The artifact id exactly as injected.")
        ],
        responses={200: serializers.ArtifactUseSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        artifact_id = request.query_params.get("artifact_id") or ""
        if not artifact_id:
            raise _bad_parameter("artifact_id", "is required")
        queryset = scope_to_caller(request, Conversation.objects.select_related("source").defer(*LIST_DEFERRED))
        queryset = queryset.filter(
            Exists(InjectedArtifact.objects.filter(conversation=OuterRef("pk"), artifact_id=artifact_id))
        )
        conversations = self.paginate_queryset(queryset) or []
        ids = [conversation.pk for conversation in conversations]
        injections: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in (
            InjectedArtifact.objects.filter(conversation_id__in=ids, artifact_id=artifact_id)
            .order_by("id")
            .values(
                "conversation_id", "kind", "tool_name", "requested", "resolved", "tool_call__call_id", "message__key"
            )
        ):
            injections[row["conversation_id"]].append(
                {
                    "kind": row["kind"],
                    "tool_name": row["tool_name"],
                    "tool_call_id": row["tool_call__call_id"],
                    "message_key": row["message__key"],
                    "requested": row["requested"],
                    "resolved": row["resolved"],
                }
            )
        labels: dict[int, dict[str, int]] = defaultdict(dict)
        for label_row in (
            FeedbackLabel.objects.filter(conversation_id__in=ids)
            .values("conversation_id", "label__name")
            .annotate(n=Count("id"))
            .order_by("conversation_id", "label__name")
        ):
            labels[label_row["conversation_id"]][label_row["label__name"]] = label_row["n"]
        for conversation in conversations:
            conversation.injection_list = injections.get(conversation.pk, [])  # type: ignore[attr-defined]
            conversation.label_counts = labels.get(conversation.pk, {})  # type: ignore[attr-defined]
        return self.get_paginated_response(self.get_serializer(conversations, many=True).data)


# --------------------------------------------------------------------------------------------------------------
# Labels


@extend_schema_view(
    get=extend_schema(
        operation_id="labels_list",
        summary="The feedback labels",
        responses={200: serializers.LabelSerializer(many=True), **READ_ERRORS},
    )
)
class LabelListView(generics.ListAPIView):
    permission_classes = [CanRead]
    serializer_class = serializers.LabelSerializer
    pagination_class = None
    filter_backends: list[Any] = []
    queryset = Label.objects.all()


# --------------------------------------------------------------------------------------------------------------
# Feedback

WRITE_ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("Not a reviewer, or not the author of this feedback (imported feedback belongs to nobody)."),
}


@extend_schema_view(
    list=extend_schema(
        operation_id="feedback_list",
        summary="List feedback",
        description="Feedback of every origin on the conversations the caller may see, newest first.",
        responses={200: serializers.FeedbackSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    ),
    retrieve=extend_schema(
        operation_id="feedback_retrieve",
        responses={200: serializers.FeedbackSerializer, **READ_ERRORS, **NOT_FOUND},
    ),
    create=extend_schema(
        operation_id="feedback_create",
        summary="Give feedback (reviewers)",
        description="Feedback on a conversation, or on one of its messages (`message`: the message's key). A "
        "reviewer has one feedback per target: posting again changes it (200) instead of adding one (201). Give "
        "at least a score, a label, a comment or a correction; only an assistant message can be corrected.",
        request=serializers.FeedbackCreateSerializer,
        responses={
            201: serializers.FeedbackSerializer,
            200: serializers.FeedbackSerializer,
            **BAD_REQUEST,
            **WRITE_ERRORS,
        },
    ),
    partial_update=extend_schema(
        operation_id="feedback_update",
        summary="Change your feedback (reviewers)",
        description="Fields left out keep their value.",
        request=serializers.FeedbackUpdateSerializer,
        responses={200: serializers.FeedbackSerializer, **BAD_REQUEST, **WRITE_ERRORS, **NOT_FOUND},
    ),
    destroy=extend_schema(
        operation_id="feedback_destroy",
        summary="Delete your feedback (reviewers)",
        responses={204: None, **WRITE_ERRORS, **NOT_FOUND},
    ),
)
class FeedbackViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    permission_classes = [CanReadOrReview]
    lookup_field = "uuid"
    filter_backends = [DjangoFilterBackend]
    filterset_class = FeedbackFilter
    pagination_class = FeedbackPagination
    serializer_class = serializers.FeedbackSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Feedback]:
        return (
            scope_to_caller(self.request, Feedback.objects.all(), source_field="conversation__source")
            .select_related("author", "conversation", "message")
            .prefetch_related("labels")
            .annotate(
                conversation_uuid=F("conversation__uuid"),
                message_key=F("message__key"),
                author_username=F("author__username"),
            )
        )

    def _answer(self, feedback: Feedback, code: int) -> Response:
        fresh = self.get_queryset().get(pk=feedback.pk)
        return Response(serializers.FeedbackSerializer(fresh).data, status=code)

    @staticmethod
    def _labels(names: list[str]) -> list[Label]:
        found = {label.name: label for label in Label.objects.filter(name__in=names)}
        unknown = [
            {"path": f"/labels/{index}", "message": f"no label named {name!r}"}
            for index, name in enumerate(names)
            if name not in found
        ]
        if unknown:
            raise exceptions.ValidationError({"errors": unknown})
        return [found[name] for name in dict.fromkeys(names)]

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = serializers.FeedbackCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        conversation = scope_to_caller(request, Conversation.objects.all()).filter(uuid=values["conversation"]).first()
        if conversation is None:
            raise _bad_parameter("conversation", "no such conversation")
        message = None
        if values.get("message") is not None:
            message = Message.objects.filter(conversation=conversation, key=values["message"]).first()
            if message is None:
                raise _bad_parameter("message", "no message with this key in the conversation")
        labels = self._labels(values.get("labels") or [])
        try:
            feedback, created = services.feedback_submit(
                author=_person(request),
                conversation=conversation,
                message=message,
                score=values.get("score"),
                labels=labels,
                comment=values.get("comment") or "",
                correction=values.get("correction") or "",
            )
        except services.ValidationError as problem:
            return errors_response(problem.errors, status.HTTP_400_BAD_REQUEST)
        except services.PermissionDenied as refused:
            return errors_response([{"path": "", "message": str(refused)}], status.HTTP_403_FORBIDDEN)
        return self._answer(feedback, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        feedback = self.get_object()
        data = serializers.FeedbackUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if feedback.author_id != request.user.pk and not request.user.is_superuser:
            # Before reading the body's labels: someone else's feedback is refused whatever the request says
            # (superusers manage all feedback, as on the pages and in the admin).
            return errors_response(
                [{"path": "", "message": "You can change only your own feedback."}], status.HTTP_403_FORBIDDEN
            )
        labels = self._labels(values["labels"]) if "labels" in values else list(feedback.labels.all())
        try:
            services.feedback_update(
                actor=_person(request),
                feedback=feedback,
                score=values.get("score", feedback.score),
                labels=labels,
                comment=values.get("comment", feedback.comment),
                correction=values.get("correction", feedback.correction),
            )
        except services.ValidationError as problem:
            return errors_response(problem.errors, status.HTTP_400_BAD_REQUEST)
        except services.PermissionDenied as refused:
            return errors_response([{"path": "", "message": str(refused)}], status.HTTP_403_FORBIDDEN)
        return self._answer(feedback, status.HTTP_200_OK)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        feedback = self.get_object()
        try:
            services.feedback_delete(actor=_person(request), feedback=feedback)
        except services.PermissionDenied as refused:
            return errors_response([{"path": "", "message": str(refused)}], status.HTTP_403_FORBIDDEN)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --------------------------------------------------------------------------------------------------------------
# Bulk export


def export_filterset(request: Request, params: QueryDict) -> ConversationFilter:
    """The shared filters over what the caller may see; `input_format` stands for the filter named `format`."""
    data = params.copy()
    for key in ("format", "envelope"):
        data.pop(key, None)
    if "input_format" in data:
        data.setlist("format", data.pop("input_format"))
    queryset = scope_to_caller(request, Conversation.objects.all())
    filterset = ConversationFilter(data, queryset=queryset, request=request)
    if not filterset.is_valid():
        errors = {("input_format" if key == "format" else key): value for key, value in filterset.errors.items()}
        raise exceptions.ValidationError(errors)
    return filterset


def audited_filters(filterset: ConversationFilter) -> dict[str, Any]:
    """The filters as given (strings), for the audit trail."""
    data = filterset.data
    return {
        ("input_format" if key == "format" else key): data.get(key)
        for key in filterset.filters
        if data.get(key) not in (None, "")
    }


class BulkExportView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="export_bulk",
        summary="Export a filtered set as NDJSON, or as training JSONL",
        description="Streams one conversation per line, newest first, selected by the same filters as the "
        "conversation list (`input_format` filters on the format a conversation arrived in). Each line is the "
        "exported document (with `envelope=true`: `{conversation, source, omitted, document}`), so a line can "
        "be sent back to `/api/v1/ingest/`. `format=training` gives the OpenAI chat fine-tuning JSONL of the "
        "active paths: a reviewer's correction replaces the corrected assistant message, hidden messages and "
        "reasoning are left out, and each line's `metadata` says where it came from (conversation uuid, "
        "source, feedback ids, corrections applied). Select training data with `score`, `label` and `status`.",
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=[*FORMATS, TRAINING],
                required=True,
                description="A conversation format, or training.",
            ),
            OpenApiParameter("envelope", bool, description="Wrap each document with its uuid and omissions."),
            *conversation_filter_parameters(rename={"format": "input_format"}),
        ],
        responses={
            (200, NDJSON): OpenApiResponse(
                OpenApiTypes.STR,
                description="Newline-delimited JSON, one conversation per line.",
                examples=[
                    OpenApiExample(
                        "training",
                        value='{"messages":[{"role":"user","content":"Why two bands?"},'
                        '{"role":"assistant","content":"Raise the annealing temperature."}],'
                        '"metadata":{"conversation":"…","source":"masterbrain","feedback":["…"]}}\n',
                    )
                ],
            ),
            **BAD_REQUEST,
            **READ_ERRORS,
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        fmt = request.query_params.get("format") or ""
        if fmt not in (*FORMATS, TRAINING):
            raise _bad_parameter("format", f"must be one of {', '.join((*FORMATS, TRAINING))}")
        envelope = (request.query_params.get("envelope") or "").lower() in ("1", "true", "yes")
        filterset = export_filterset(request, request.query_params)
        queryset = filterset.qs
        services.export_record(
            actor=_caller(request),
            what="conversations",
            format=fmt,
            filters=audited_filters(filterset),
            count=queryset.count(),
        )
        response = StreamingHttpResponse(exporting.export_lines(queryset, fmt, envelope=envelope), content_type=NDJSON)
        suffix = "jsonl" if fmt == TRAINING else "ndjson"
        response["Content-Disposition"] = f'attachment; filename="conversations-{fmt}.{suffix}"'
        return response
