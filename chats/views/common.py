"""What every page of the review site shares: the sign-in and role check of each view (``reviewer_page``), the
roles of the request, and the links back to the conversation list that pages keep.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse

from chats.filters.conversations import ConversationFilter
from chats.models import Conversation
from chats.roles import Roles, request_roles

# The list's own parameters, kept with the filters in every link that leads back to it.
LIST_EXTRA_KEYS = ("sort",)


def roles_of(request: HttpRequest) -> Roles:
    """What the signed-in user may do here: one query for their groups, once per request."""
    return request_roles(request)


def reviewer_page(*, write: bool = False) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Sign-in required (else to the sign-in page), then a reader role; ``write`` also requires a reviewer."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            roles = roles_of(request)
            if not roles.can_read or (write and not roles.can_write):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def actor(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # reviewer_page() lets only signed-in users through
    return user


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def list_query_string(params: QueryDict) -> str:
    """The filters (and sort) of a query string, without paging: what links back to the list keep."""
    keys = [*ConversationFilter.base_filters, *LIST_EXTRA_KEYS]
    pairs = [(key, value) for key in keys for value in params.getlist(key) if value != ""]
    return urlencode(pairs)


def feedback_urls(conversation: Conversation) -> dict[str, str]:
    """Reversed once per page rather than once per message."""
    return {
        "feedback_save": reverse("chats:feedback_save", args=[conversation.uuid]),
        "feedback_form": reverse("chats:feedback_form", args=[conversation.uuid]),
    }


def with_anchor(url: str, anchor: str) -> str:
    return f"{url.split('#', 1)[0]}#{anchor}"
