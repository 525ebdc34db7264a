"""Saved views API (`/api/v1/views/`): a person's own views and the team's shared ones.

Every person with a reading role lists and reads their own views and the shared ones; they create views of their
own, and change or delete only those. Only leads (and superusers) share a view. Another person's personal view
answers 404, as one that does not exist; someone else's shared view answers 403 to a change. A source's key has no
views (403). Every write is audited (`saved_view.created`, `.updated`, `.deleted`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chats.api.errors import first_or_404
from chats.api.schema import BAD_REQUEST, NOT_FOUND, READ_ERRORS, WRITE_ERRORS
from chats.api.serializers.saved_views import SavedViewInputSerializer, SavedViewSerializer
from chats.errors import InvalidInput
from chats.models import SavedView
from chats.roles import person_roles
from chats.selectors.saved_views import saved_views_visible
from chats.services.saved_views import saved_view_create, saved_view_delete, saved_view_update


class PersonCanRead(BasePermission):
    message = "Saved views belong to people with the Reviewers, Auditors or Leads role (not to a source's key)."

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.user, User) and person_roles(request.user).can_read


def _person(request: Request) -> User:
    user = request.user
    assert isinstance(user, User)  # PersonCanRead
    return user


def _input(request: Request, *, partial: bool) -> dict[str, Any]:
    serializer = SavedViewInputSerializer(data=request.data, partial=partial)
    if not serializer.is_valid():
        raise InvalidInput(
            [
                {"path": f"/{field}", "message": " ".join(str(message) for message in messages)}
                for field, messages in serializer.errors.items()
            ]
        )
    return dict(serializer.validated_data)


def _whole(given: dict[str, Any]) -> dict[str, Any]:
    """A whole view's fields (a creation, a PUT): what is left out is no filter and not shared."""
    return {"query": "", "shared": False, **given}


def _out(view: SavedView, user: User) -> dict[str, Any]:
    return dict(SavedViewSerializer(view, context={"user": user}).data)


class SavedViewListView(APIView):
    permission_classes = [PersonCanRead]

    @extend_schema(responses={200: SavedViewSerializer(many=True), **READ_ERRORS}, summary="Your views and shared ones")
    def get(self, request: Request) -> Response:
        user = _person(request)
        views = saved_views_visible(user)
        return Response(SavedViewSerializer(views, many=True, context={"user": user}).data)

    @extend_schema(
        request=SavedViewInputSerializer,
        responses={201: SavedViewSerializer, **BAD_REQUEST, **WRITE_ERRORS},
        summary="Save a view (only leads share one)",
    )
    def post(self, request: Request) -> Response:
        user = _person(request)
        given = _whole(_input(request, partial=False))
        view = saved_view_create(actor=user, name=given["name"], query=given["query"], shared=given["shared"])
        return Response(_out(view, user), status=status.HTTP_201_CREATED)


class SavedViewDetailView(APIView):
    permission_classes = [PersonCanRead]

    def _view(self, request: Request, uuid: str) -> SavedView:
        views = saved_views_visible(_person(request)).filter(uuid=uuid)
        return first_or_404(views, "No such view among yours and the shared ones.")

    @extend_schema(responses={200: SavedViewSerializer, **READ_ERRORS, **NOT_FOUND}, summary="A view")
    def get(self, request: Request, uuid: str) -> Response:
        return Response(_out(self._view(request, uuid), _person(request)))

    @extend_schema(
        request=SavedViewInputSerializer,
        responses={200: SavedViewSerializer, **BAD_REQUEST, **WRITE_ERRORS, **NOT_FOUND},
        summary="Rename, re-filter or (leads) share your view",
    )
    def patch(self, request: Request, uuid: str) -> Response:
        return self._update(request, uuid, partial=True)

    @extend_schema(
        request=SavedViewInputSerializer,
        responses={200: SavedViewSerializer, **BAD_REQUEST, **WRITE_ERRORS, **NOT_FOUND},
        summary="Replace your view's name, filters and sharing",
    )
    def put(self, request: Request, uuid: str) -> Response:
        return self._update(request, uuid, partial=False)

    def _update(self, request: Request, uuid: str, *, partial: bool) -> Response:
        """A PATCH changes only the fields given; a PUT replaces them all, as a creation would set them."""
        user = _person(request)
        view = self._view(request, uuid)
        given = _input(request, partial=partial)
        if not partial:
            given = _whole(given)
        saved_view_update(
            actor=user, view=view, name=given.get("name"), query=given.get("query"), shared=given.get("shared")
        )
        return Response(_out(view, user))

    @extend_schema(responses={204: None, **WRITE_ERRORS, **NOT_FOUND}, summary="Delete your view")
    def delete(self, request: Request, uuid: str) -> Response:
        saved_view_delete(actor=_person(request), view=self._view(request, uuid))
        return Response(status=status.HTTP_204_NO_CONTENT)
