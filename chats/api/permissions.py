"""Who may read and write through the API.

People (a session, or a personal token) read when they are reviewers, auditors or staff, and write feedback
when they are reviewers (or superusers): the same roles as the review pages. A source's key reads only the
conversations of its own source and writes no feedback.
"""

from __future__ import annotations

from django.db.models import Model, QuerySet
from rest_framework import permissions
from rest_framework.request import Request

from chats.api.authentication import SourcePrincipal
from chats.models import Source
from chats.roles import Roles, person_roles


def api_roles(request: Request) -> Roles:
    """The caller's roles, once per request: a source's key reads its own source; a person as their groups say."""
    cached = getattr(request, "_api_roles", None)
    if isinstance(cached, Roles):
        return cached
    user = request.user
    roles = Roles(can_read=True, can_write=False) if isinstance(user, SourcePrincipal) else person_roles(user)
    request._api_roles = roles  # type: ignore[attr-defined]
    return roles


def caller_source(request: Request) -> Source | None:
    """The source whose key the request carries, which the caller's reads are limited to; None for a person."""
    user = request.user
    return user.source if isinstance(user, SourcePrincipal) else None


def scope_to_caller[M: Model](request: Request, queryset: QuerySet[M], source_field: str = "source") -> QuerySet[M]:
    """What the caller may see of `queryset`: everything for a person with a reading role, one source for a key."""
    source = caller_source(request)
    return queryset if source is None else queryset.filter(**{source_field: source})


class CanRead(permissions.BasePermission):
    message = "You need the Reviewers or Auditors role (or a source's key) to read conversations."

    def has_permission(self, request: Request, view: object) -> bool:
        return bool(request.user and request.user.is_authenticated) and api_roles(request).can_read


class CanReadOrReview(CanRead):
    """Reads for every reader; writes (POST, PATCH, DELETE) only for reviewers."""

    write_message = "Only reviewers can give feedback."

    def has_permission(self, request: Request, view: object) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        if not api_roles(request).can_write:
            self.message = self.write_message
            return False
        return True
