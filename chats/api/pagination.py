"""Cursor pagination, every cursor written and read by the one codec (`chats.cursors`). Conversations page by keyset
on (last_activity_at, id), the review pages' own pages (`chats.selectors.conversations.conversation_page`); the other
lists (feedback, export jobs, a queue's items) by DRF's cursor on their ordering (`SignedCursorPagination`)."""

from __future__ import annotations

from typing import Any, cast

from django.db.models import DateTimeField, Field, IntegerField, Model, QuerySet
from django.db.models.fields import AutoFieldMixin
from rest_framework import serializers
from rest_framework.pagination import BasePagination, Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from chats import cursors
from chats.api.fields import IntegerSerializerField
from chats.cursors import NOT_A_CURSOR
from chats.errors import InvalidInput
from chats.integers import parse_int, require_int
from chats.json_types import JSONObject
from chats.models import Conversation
from chats.selectors.conversations import PAGE_SIZE, Page, conversation_page, decode_cursor
from chats.storable import unstorable

MAX_PAGE_SIZE = 200


class PageQuery(serializers.Serializer[Any]):
    """`cursor`: `n.<token>` (the page after a row) or `p.<token>` (the page before one), as the links give it."""

    cursor = serializers.CharField(required=False)
    page_size = IntegerSerializerField(required=False, default=PAGE_SIZE, min_value=1, max_value=MAX_PAGE_SIZE)

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
        self, queryset: QuerySet[Conversation], request: Request, view: APIView | None = None
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

    def get_paginated_response(self, data: object) -> Response:
        return Response(
            {
                "next": self._link(self.page.next_cursor, "n"),
                "previous": self._link(self.page.previous_cursor, "p"),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: JSONObject) -> JSONObject:
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "next": {"type": "string", "format": "uri", "nullable": True},
                "previous": {"type": "string", "format": "uri", "nullable": True},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: APIView) -> list[JSONObject]:
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


class SignedCursorPagination(CursorPagination):
    """DRF's cursor pagination (the first ordering field's value, an offset among rows that share it, and a
    direction), its cursor written and read by the one codec (`chats.cursors`), salted by the list's class. A cursor
    that is not one of this list's, or whose position does not fit the ordering field, is a 400 naming `cursor`
    (DRF answers 404 for some and lets others reach the query); a `page_size` outside 1 to `max_page_size` is a
    400 naming `page_size` (DRF silently uses its default)."""

    _position_field: Field[Any, Any] | None = None

    def paginate_queryset(  # type: ignore[override]  # it pages querysets only
        self, queryset: QuerySet[Model], request: Request, view: APIView | None = None
    ) -> list[Model] | None:
        # DRF reads the view with getattr (None has no ordering filters); the stubs ask for a view.
        ordering = self.get_ordering(request, queryset, view)  # type: ignore[arg-type]
        self._position_field = queryset.model._meta.get_field(ordering[0].lstrip("-"))
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request: Request) -> int | None:
        raw = request.query_params.get(self.page_size_query_param) if self.page_size_query_param else None
        if raw is None:
            return self.page_size
        return require_int(raw, name=f"/{self.page_size_query_param}", minimum=1, maximum=self.max_page_size or 1000)

    def _kind(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}"

    def encode_cursor(self, cursor: Cursor) -> str:
        token = cursors.encode(self._kind(), [cursor.offset, cursor.reverse, cursor.position])
        return replace_query_param(self.base_url or "", self.cursor_query_param, token)

    def decode_cursor(self, request: Request) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if not encoded:  # absent, or an empty form field: the first page, as on the conversation list
            return None
        values = cursors.require(encoded, self._kind(), name=self.cursor_query_param)
        if len(values) == 3:
            offset = parse_int(values[0], minimum=0, maximum=self.offset_cutoff)
            reverse, position = values[1], values[2]
            if offset is not None and isinstance(reverse, bool) and self._position_fits(position):
                # The stubs type the position as an int; DRF's own is the ordering field's value as text.
                return Cursor(offset=offset, reverse=reverse, position=cast("int | None", position))
        raise InvalidInput([{"path": f"/{self.cursor_query_param}", "message": cursors.NOT_A_CURSOR}])

    def _position_fits(self, position: object) -> bool:
        """Whether ``position`` can be compared with the ordering field (signed, but written under another
        ordering or another key: never a query error)."""
        if position is None:
            return True
        field = self._position_field
        if isinstance(field, DateTimeField):
            return cursors.moment(position) is not None
        if isinstance(field, IntegerField | AutoFieldMixin):
            return cursors.row_id(position) is not None
        return isinstance(position, str) and unstorable(position) is None


class FeedbackPagination(SignedCursorPagination):
    ordering = "-id"
    page_size = 100


class ExportJobPagination(SignedCursorPagination):
    """A caller's export jobs, newest first, by the same id cursor as feedback."""

    ordering = "-id"
    page_size = 50


class QueueItemPagination(SignedCursorPagination):
    """A queue's items, oldest first."""

    ordering = ("created_at", "id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
