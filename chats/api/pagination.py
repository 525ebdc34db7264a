"""Cursor pagination. Conversations page by keyset on (last_activity_at, id), the review pages' own pages
(`chats.selectors.conversations.conversation_page`); feedback by DRF's cursor on the id."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions, serializers
from rest_framework.pagination import BasePagination, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from chats.models import Conversation
from chats.selectors.conversations import MAX_ID, PAGE_SIZE, Page, conversation_page, decode_cursor

MAX_PAGE_SIZE = 200
NOT_A_CURSOR = "not a cursor this API gave out"


class PageQuery(serializers.Serializer[Any]):
    """`cursor`: `n.<token>` (the page after a row) or `p.<token>` (the page before one), as the links give it."""

    cursor = serializers.CharField(required=False)
    page_size = serializers.IntegerField(required=False, default=PAGE_SIZE, min_value=1, max_value=MAX_PAGE_SIZE)

    def validate_cursor(self, value: str) -> str:
        direction, _, token = value.partition(".")
        if direction not in ("n", "p") or decode_cursor(token) is None:
            raise serializers.ValidationError(NOT_A_CURSOR)
        return value


class ConversationCursorPagination(BasePagination):
    """Newest first by (last_activity_at, id). A cursor names a row, not an offset: conversations that arrive
    while a client pages neither repeat a row nor make it skip one."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    request: Request
    page: Page

    def paginate_queryset(  # type: ignore[override]  # it pages conversations only
        self, queryset: QuerySet[Conversation], request: Request, view: Any = None
    ) -> list[Conversation]:
        query = PageQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        direction, _, token = query.validated_data.get("cursor", "").partition(".")
        self.request = request
        self.page = conversation_page(
            queryset,
            after=token if direction == "n" else None,
            before=token if direction == "p" else None,
            size=query.validated_data["page_size"],
        )
        return self.page.conversations

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
                "description": f"Conversations per page (1 to {MAX_PAGE_SIZE}, default {PAGE_SIZE}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
            },
        ]


class FeedbackPagination(CursorPagination):
    ordering = "-id"
    page_size = 100

    def decode_cursor(self, request: Request) -> Any:
        try:
            cursor = super().decode_cursor(request)
            # DRF checks the offset but not the position, which is compared with the id: a bigint, or no cursor.
            if cursor is not None and cursor.position is not None and not 0 < int(cursor.position) <= MAX_ID:
                raise ValueError(cursor.position)
        except (exceptions.NotFound, ValueError):
            # A malformed parameter, like every other: 400 naming it (DRF answers 404).
            raise exceptions.ValidationError({self.cursor_query_param: [NOT_A_CURSOR]}) from None
        return cursor


class ExportJobPagination(FeedbackPagination):
    """A caller's export jobs, newest first, by the same id cursor as feedback."""

    page_size = 50
