"""Who may use the team review API (people with a role, never a source's key), and what its views share: the
responses every one documents, the caller as a person, a lead's check, an input's validation and a visible queue."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework import permissions
from rest_framework.request import Request

from chats.api.authentication import SourcePrincipal
from chats.api.permissions import api_roles
from chats.api.schema import error
from chats.models import Queue
from chats.roles import Roles, lead_required
from chats.selectors.review import queue_visible

ERRORS = {
    401: error("No credentials, or an unknown or revoked key."),
    403: error("A source's key, or a person without the role this needs (or not a member of the queue)."),
}


class IsPerson(permissions.BasePermission):
    """A signed-in person with a role (reading, or leading); a source's key is refused."""

    message = "Team review is for people with the Reviewers, Auditors or Leads role, not for a source's key."

    def has_permission(self, request: Request, view: object) -> bool:
        user = request.user
        if not (user and user.is_authenticated) or isinstance(user, SourcePrincipal):
            return False
        roles = api_roles(request)
        return roles.can_read or roles.can_lead


def person_of(request: Request) -> User:
    user = request.user
    assert isinstance(user, User)
    return user


def lead_roles(request: Request) -> Roles:
    """The services refuse anyone but a lead (`lead_required`); asked first here, so that the refusal comes before
    the input's errors."""
    roles = api_roles(request)
    lead_required(roles)
    return roles


def valid_input(serializer_class: type[Any], data: object) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def visible_queue(request: Request, pk: int) -> Queue:
    return queue_visible(request.user, api_roles(request), pk)
