"""OpenAPI pieces that are not a view: the API-key security scheme, shared parameters and error responses."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from chats.api.serializers import ErrorSerializer
from chats.filters import ConversationFilter


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "chats.api.authentication.ApiKeyAuthentication"
    name = "apiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Api-Key <key>`: a source's key (ingest, and read that source's conversations) or a "
            "personal token of a reviewer or auditor (`python manage.py create_api_token USERNAME`).",
        }


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


READ_ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("The caller has no reading role (Reviewers, Auditors, staff, or a source's key)."),
}
NOT_FOUND = {404: error("No such object among those the caller may see.")}
BAD_REQUEST = {400: error("Invalid parameters: each error names the parameter (`/name`) and says why.")}

# The conversation filters as query parameters. On the export endpoints `format` names the output, so the
# filter on the input format is spelled `input_format` there.
_FILTER_TYPES: dict[type, Any] = {
    django_filters.DateFilter: OpenApiTypes.DATE,
    django_filters.BooleanFilter: OpenApiTypes.BOOL,
}


def conversation_filter_parameters(*, rename: dict[str, str] | None = None) -> list[OpenApiParameter]:
    rename = rename or {}
    parameters = []
    for name, filter_ in ConversationFilter.base_filters.items():
        enum = None
        extra = filter_.extra.get("choices")
        if isinstance(filter_, django_filters.ChoiceFilter) and extra:
            enum = [str(value) for value, _ in extra]
        parameters.append(
            OpenApiParameter(
                rename.get(name, name),
                _FILTER_TYPES.get(type(filter_), OpenApiTypes.STR),
                enum=enum,
                description=str(filter_.label or name),
            )
        )
    return parameters
