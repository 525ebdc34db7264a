"""The OpenAPI description of the read, feedback and export endpoints: the API-key security scheme, the shared
error responses, and each view's operations, applied to the views as class decorators so that a view holds only
what it does. Query parameters are documented from the serializers that validate them."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view

from chats.api.pagination import MAX_PAGE_SIZE
from chats.api.serializers.artifacts import (
    ArtifactDetailSerializer,
    ArtifactExportQuery,
    ArtifactListQuery,
    ArtifactListSerializer,
)
from chats.api.serializers.common import ErrorSerializer
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
from chats.filters.exports import ExportFilter
from chats.filters.model_setting import MODEL_SETTING_PATTERN, ModelSettingFilter

NDJSON = "application/x-ndjson"
OMITTED_HEADER = "X-Export-Omitted"
NOT_INDEXED_HEADER = "X-Search-Not-Indexed"


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # its __init_subclass__ is untyped
    target_class = "chats.api.authentication.ApiKeyAuthentication"
    name = "apiKeyAuth"

    def get_security_definition(self, auto_schema: object) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Api-Key <key>`: a source's key (ingest, and read that source's conversations) or a "
            "personal token of a reviewer or auditor (`python manage.py create_api_token USERNAME`).",
        }


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def ndjson(description: str, example: str, line: str) -> dict[tuple[int, str], OpenApiResponse]:
    """A 200 streamed as newline-delimited JSON, with one `line` as its `example`."""
    return {
        (200, NDJSON): OpenApiResponse(
            OpenApiTypes.STR, description=description, examples=[OpenApiExample(example, value=line)]
        )
    }


READ_ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("The caller has no reading role (Reviewers, Auditors, staff, or a source's key)."),
}
WRITE_ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("Not a reviewer, or not the author of this feedback (imported feedback belongs to nobody)."),
}
NOT_FOUND = {404: error("No such object among those the caller may see.")}
BAD_REQUEST = {400: error("Invalid parameters: each error names the parameter (`/name`) and says why.")}

# The conversation filters as query parameters, where a view reads them itself (the list's come from its backend).
_FILTER_TYPES: dict[type, Any] = {
    django_filters.DateFilter: OpenApiTypes.DATE,
    django_filters.BooleanFilter: OpenApiTypes.BOOL,
}


def filter_parameters(filterset: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    parameters = []
    for name, filter_ in filterset.base_filters.items():
        enum = None
        extra = filter_.extra.get("choices")
        many = isinstance(filter_, django_filters.MultipleChoiceFilter)  # repeated: ?name=a&name=b
        if (many or isinstance(filter_, django_filters.ChoiceFilter)) and extra:
            enum = [str(value) for value, _ in extra]
        label, help_text = str(filter_.label or name), filter_.extra.get("help_text")
        parameters.append(
            OpenApiParameter(
                name,
                _FILTER_TYPES.get(type(filter_), OpenApiTypes.STR),
                enum=enum,
                pattern=MODEL_SETTING_PATTERN if isinstance(filter_, ModelSettingFilter) else None,
                many=many or None,
                description=f"{label}: {help_text}" if help_text else label,
            )
        )
    return parameters


# --------------------------------------------------------------------------------------------------------------
# The views' operations

conversations = extend_schema_view(
    list=extend_schema(
        operation_id="conversations_list",
        summary="List conversations",
        description="Newest first (by last activity, then id), with the same filters as the review pages and "
        "full-text `q` (what is stored is found as soon as its ingestion is acknowledged). Cursor pagination: "
        f"follow `next` and `previous`. The response header `{NOT_INDEXED_HEADER}` is always `0` (deprecated: "
        "nothing waits to be indexed; it will be removed in the next release).",
        parameters=[
            OpenApiParameter(
                "model_setting",
                str,
                pattern=MODEL_SETTING_PATTERN,
                description="A setting of the model as given, `key=value` (the value read as JSON when it is JSON), "
                "for example `enable_thinking=true`",
            ),
            OpenApiParameter(
                NOT_INDEXED_HEADER,
                str,
                location=OpenApiParameter.HEADER,
                response=[200],
                description="Always `0` (deprecated): search vectors are built as messages are stored.",
            ),
        ],
        responses={200: ConversationListSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    ),
    retrieve=extend_schema(
        operation_id="conversations_retrieve",
        summary="Read a conversation",
        description="The conversation with its messages along the active path (`?branch=all`: every branch, in "
        "order of arrival), each with its tool calls (linked to the tool message answering them), the injected "
        "artifacts, and the feedback on the listed messages and on the conversation. A long thread can be read "
        "in windows of the active path: `?limit=` (the first window), then `?after=<window.next_after>` (or "
        "follow `window.next`) until `window.next` is null; each window costs the same whatever the thread's "
        "size. Without `after` nor `limit`, the whole path (or tree) is listed and `window` is left out.",
        parameters=[BranchQuery],
        responses={200: ConversationDetailSerializer, **BAD_REQUEST, **READ_ERRORS, **NOT_FOUND},
    ),
    export=extend_schema(
        operation_id="conversations_export",
        summary="Export a conversation in any format",
        description="The conversation as a document of `format`. In the format it arrived in, the document is "
        "equivalent to what was received. A format that cannot hold part of the conversation (branches in a "
        "linear format, tool calls in a chat graph, ...) gets the active path, and the response header "
        f"`{OMITTED_HEADER}` lists what was left out as a JSON array of notes (`[]` when nothing was).",
        parameters=[
            ConversationExportQuery,
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
    ),
)

artifact_list = extend_schema_view(
    get=extend_schema(
        operation_id="artifacts_list",
        summary="Every artifact seen, with its figures",
        description="One item per artifact (kind and id) injected into a conversation the caller may see, or only "
        "listed by its Record QA injection context: the conversations that injected it, those that only permitted "
        "it (listed, not injected), the injections that were not permitted, the feedback scores and labels on "
        "the conversations that injected it, and when it was first and last injected. Filter by `kind` and "
        "`source`, order by `sort`, page by `page` (50 a page, at most 200 pages; follow `next`). A source's key "
        "sees its own source's conversations only. `?artifact_id=` (deprecated) redirects to the artifact's "
        "detail, whose `results` are the conversations it used to list.",
        parameters=[ArtifactListQuery],
        responses={
            200: ArtifactListSerializer,
            308: OpenApiResponse(description="`?artifact_id=`: to /api/v1/artifacts/{artifact_id}/ (Location)."),
            **BAD_REQUEST,
            **READ_ERRORS,
        },
    )
)

artifact_detail = extend_schema_view(
    get=extend_schema(
        operation_id="artifacts_retrieve",
        summary="One artifact: its figures, payload versions and conversations",
        description="The artifact's figures per kind, its distinct payloads (versions, by a hash of the canonical "
        "JSON, oldest first) each with the newest conversations that got it, and the conversations that injected "
        "it, newest first, a page at a time (`results`, with `next` and `previous` cursors), each with the "
        "injections that brought it in and its feedback summary and label counts. The id goes in the path as "
        "given, percent-encoded where a path needs it (dots and slashes may stay).",
        parameters=[
            OpenApiParameter(
                "artifact_id", str, OpenApiParameter.PATH, description="The artifact id exactly as injected."
            ),
            OpenApiParameter("cursor", str, description="An opaque cursor from `next` or `previous`."),
            OpenApiParameter(
                "page_size", int, description=f"Conversations per page of `results` (1 to {MAX_PAGE_SIZE})."
            ),
        ],
        responses={200: ArtifactDetailSerializer, **BAD_REQUEST, **READ_ERRORS, **NOT_FOUND},
    )
)

artifact_export = extend_schema_view(
    get=extend_schema(
        operation_id="artifacts_export",
        summary="Export the artifact list as NDJSON",
        description="Streams one line per artifact (kind and id), ordered by kind then id, with the list's figures "
        "and filters (`kind`, `source`). Recorded in the audit trail like every export.",
        parameters=[ArtifactExportQuery],
        responses={
            **ndjson(
                "Newline-delimited JSON, one artifact per line (the list's item shape).",
                "artifact",
                '{"kind":"protocol","artifact_id":"airalogy.id.lab.example.protocol.v.0.0.1",'
                '"injected_conversations":3,"permitted_only":1,"violations":0,'
                '"first_injected_at":"2025-01-02T08:00:00+00:00","last_injected_at":"2025-01-09T08:00:00+00:00",'
                '"last_received_at":"2025-01-09T08:00:02+00:00","scores":{"up":2,"neutral":0,"down":1},"labels":{"helpful":2}}\n',
            ),
            **BAD_REQUEST,
            **READ_ERRORS,
        },
    )
)

labels = extend_schema_view(
    get=extend_schema(
        operation_id="labels_list",
        summary="The feedback labels",
        responses={200: LabelSerializer(many=True), **READ_ERRORS},
    )
)

feedback = extend_schema_view(
    list=extend_schema(
        operation_id="feedback_list",
        summary="List feedback",
        description="Feedback of every origin on the conversations the caller may see, newest first.",
        responses={200: FeedbackSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    ),
    retrieve=extend_schema(
        operation_id="feedback_retrieve",
        responses={200: FeedbackSerializer, **READ_ERRORS, **NOT_FOUND},
    ),
    create=extend_schema(
        operation_id="feedback_create",
        summary="Give feedback (reviewers)",
        description="Feedback on a conversation, or on one of its messages (`message`: the message's key). A "
        "reviewer has one feedback per target: posting again changes it (200) instead of adding one (201). Give "
        "at least a score, a label, a comment or a correction; only an assistant message can be corrected.",
        request=FeedbackCreateSerializer,
        responses={
            201: FeedbackSerializer,
            200: FeedbackSerializer,
            **BAD_REQUEST,
            **WRITE_ERRORS,
        },
    ),
    partial_update=extend_schema(
        operation_id="feedback_update",
        summary="Change your feedback (reviewers)",
        description="Fields left out keep their value.",
        request=FeedbackUpdateSerializer,
        responses={200: FeedbackSerializer, **BAD_REQUEST, **WRITE_ERRORS, **NOT_FOUND},
    ),
    destroy=extend_schema(
        operation_id="feedback_destroy",
        summary="Delete your feedback (reviewers)",
        responses={204: None, **WRITE_ERRORS, **NOT_FOUND},
    ),
)

bulk_export = extend_schema_view(
    get=extend_schema(
        operation_id="export_bulk",
        summary="Export a filtered set as NDJSON, or as training JSONL",
        description="Streams one conversation per line, newest first, selected by the same filters as the "
        "conversation list (`input_format` filters on the format a conversation arrived in). Each line is the "
        "exported document (with `envelope=true`: `{conversation, source, omitted, policy, document}`, where "
        "`policy` is null without a Record QA injection context, else `{violation, artifacts: [{kind, "
        "artifact_id, tool_call_id, message_key, verdict}], context_ids: [{kind, artifact_id, id_well_formed, "
        "state}]}`), so a line can be sent back to `/api/v1/ingest/`. `format=training` gives the OpenAI chat "
        "fine-tuning JSONL of the active paths: a reviewer's correction replaces the corrected assistant message, "
        "hidden messages and reasoning are left out, and each line's `metadata` says where it came from "
        "(conversation uuid, source, feedback ids, corrections applied, whether it is a policy violation). Select "
        "training data with `score`, `label` and `status`.",
        parameters=[BulkExportQuery, *filter_parameters(ExportFilter)],
        responses={
            **ndjson(
                "Newline-delimited JSON, one conversation per line.",
                "training",
                '{"messages":[{"role":"user","content":"Why two bands?"},'
                '{"role":"assistant","content":"Raise the annealing temperature."}],'
                '"metadata":{"conversation":"…","source":"masterbrain","feedback":["…"]}}\n',
            ),
            **BAD_REQUEST,
            **READ_ERRORS,
        },
    )
)
