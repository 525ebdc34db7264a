"""Refuse query strings that no database can take, before any view sees them."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


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
