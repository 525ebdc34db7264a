"""Request-wide rules: query strings no database can take are refused before any view sees them, and the
domain's errors become the pages' responses in one place."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views import defaults

from chats.errors import DomainError, NotAllowed


class RejectNulCharacterMiddleware:
    """A NUL character in a query parameter is never meaningful, and PostgreSQL refuses it in any text."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                message = f"the query parameter {name!r} contains a NUL character"
                if request.path.startswith("/api/"):
                    body = {"errors": [{"path": f"/query/{name}", "message": message}]}
                    return HttpResponseBadRequest(json.dumps(body), content_type="application/json")
                return HttpResponseBadRequest(message, content_type="text/plain")
        return self.get_response(request)


class DomainErrorMiddleware:
    """A domain error a page view lets through becomes the site's 403 page (`NotAllowed`) or a 400 that says why.

    The API maps the same errors in its exception handler (`chats.api.errors`); DRF views never reach this.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, NotAllowed):
            return defaults.permission_denied(request, PermissionDenied(str(exception)))
        if isinstance(exception, DomainError):
            return HttpResponseBadRequest(str(exception), content_type="text/plain")
        return None
