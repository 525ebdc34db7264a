"""Request-wide rules: every request has an id (in the `X-Request-ID` header, the logs, and the body of an API 500),
query strings no database can take are refused before any view sees them, every error under /api/ has the API's
error shape, and the domain's errors become the pages' responses in one place."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views import defaults

from chats.errors import DomainError, NotAllowed

REQUEST_ID_HEADER = "X-Request-ID"
# An id a proxy in front of the site already gave the request is kept when it is a plain token; any other is replaced.
_GIVEN_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def current_request_id() -> str:
    """The id of the request being served ("-" outside one)."""
    return _request_id.get()


class RequestIdMiddleware:
    """Gives each request an id: the `X-Request-ID` it came with when that is a plain token, else a new one. The id
    is `request.request_id`, the response's `X-Request-ID`, and every log record's `request_id` (`RequestIdFilter`),
    so that a client's report of a failure leads to its traceback."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = given if _GIVEN_ID.fullmatch(given) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        token = _request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _request_id.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class RequestIdFilter(logging.Filter):
    """Adds `request_id` (the request being served, or "-") to every log record: see LOGGING in the settings."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        return True


def api_error_body(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """The API's error shape for an error no view answered: `{"errors": [...], "request_id": ...}`."""
    body = {"errors": [{"path": "", "message": message}], "request_id": getattr(request, "request_id", None)}
    return HttpResponse(json.dumps(body), status=status, content_type="application/json")


def _for_people(content_type: str) -> bool:
    """Whether a response's media type is a page for people (HTML, plain text, or none said)."""
    return not content_type or content_type.startswith("text/")


class ApiErrorShapeMiddleware:
    """Under /api/, an error answered by something other than the API's exception handler (Django's 404 or 500
    page, a 405 from a non-DRF view, a 413 from the body limit) gets the API's `{"errors": [...]}` shape, keeping
    its status and headers (Allow, Retry-After...). Only a page meant for people (HTML or plain text) is reshaped:
    an error in JSON, or in a media type an API protocol requires (OTLP answers protobuf), is left as it is."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith("/api/")
            or not _for_people(response.get("Content-Type", ""))
            or response.streaming
        ):
            return response
        shaped = api_error_body(request, response.status_code, response.reason_phrase)
        for header, value in response.items():
            if header.lower() not in ("content-type", "content-length"):
                shaped[header] = value
        return shaped


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
