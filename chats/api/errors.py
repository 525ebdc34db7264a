"""One error shape for every API response: {"errors": [{"path": "/json/pointer", "message": "..."}]}.

`exception_handler` (DRF's, see settings) is the one place where an exception becomes an error response: DRF's own
(invalid input, authentication, permissions, not found) and the domain's (`chats.errors`), which the views let
propagate from the services and selectors.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from chats.errors import DomainError, InvalidInput
from chats.middleware import api_error_body


def error_list(detail: object, path: str = "") -> list[dict[str, str]]:
    """Flatten DRF's nested error details into a list of {path, message} with JSON pointers."""
    if isinstance(detail, dict):
        if set(detail) == {"errors"} and isinstance(detail["errors"], list):
            return list(detail["errors"])
        out: list[dict[str, str]] = []
        for key, value in detail.items():
            sub = (
                path
                if key in ("non_field_errors", "detail")
                else f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            )
            out.extend(error_list(value, sub))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return [{"path": path, "message": str(item)} for item in detail]
        out = []
        for index, item in enumerate(detail):
            out.extend(error_list(item, f"{path}/{index}") if isinstance(item, dict | list) else error_list(item, path))
        return out
    return [{"path": path, "message": str(detail)}]


def _printable(text: object) -> str:
    """An error's path or message as text any response can carry: a message may quote what the client sent, and
    a lone surrogate or a NUL in it would fail the JSON renderer (a 500 for a 400)."""
    return str(text).replace("\x00", "\\u0000").encode(errors="backslashreplace").decode()


def printable_errors(errors: Sequence[Mapping[str, object]]) -> list[dict[str, str]]:
    return [{key: _printable(value) for key, value in error.items()} for error in errors]


def errors_response(errors: list[dict[str, str]], status: int, **extra: object) -> Response:
    return Response({"errors": printable_errors(errors), **extra}, status=status)


def first_or_404[Row: Model](rows: QuerySet[Row], message: str) -> Row:
    """The first of `rows`, or a 404 saying `message` (what was looked for, among what the caller may see)."""
    row = rows.first()
    if row is None:
        raise Http404(message)
    return row


def refuse_missing[Key](field: str, wanted: Sequence[Key], found: Collection[Key], message: str) -> None:
    """A 400 naming each entry of the list `field` that is not among those `found` (`/field/<index>`)."""
    missing = [
        {"path": f"/{field}/{index}", "message": message} for index, key in enumerate(wanted) if key not in found
    ]
    if missing:
        raise InvalidInput(missing)


def exception_handler(exc: Exception, context: dict[str, object]) -> Response | None:
    if isinstance(exc, DomainError):
        set_rollback()  # as DRF does for its own: nothing of a refused request is kept
        return errors_response(exc.errors, exc.status_code)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.APIException):
        response.data = {"errors": printable_errors(error_list(exc.detail))}
    elif isinstance(response.data, dict) and "errors" not in response.data:
        # Django's Http404 and PermissionDenied, which DRF answers as {"detail": ...}.
        response.data = {"errors": printable_errors(error_list(response.data))}
    elif isinstance(response.data, dict) and isinstance(response.data["errors"], list):
        response.data["errors"] = printable_errors(response.data["errors"])
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """The site's 500 (Django has logged the traceback with the request's id, see chats.middleware): under /api/
    the API's error shape with the request's id to quote, elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return api_error_body(request, 500, "Internal server error. Quote the request_id when you report it.")
    return defaults.server_error(request)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 404: under /api/ the API's error shape (a URL that names no endpoint, or a malformed id),
    elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"errors": [{"path": "", "message": "Not found."}]}, status=404)
    return defaults.page_not_found(request, exception)
