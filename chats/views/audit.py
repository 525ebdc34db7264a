"""The audit section: the event list with its filters, one event with its diff, and the export of the log.

For the Auditors group, staff and superusers (`Roles.can_audit`), with no staff flag needed; reviewers are refused
(403) and anyone not signed in is sent to the sign-in page. Session only: an API key has no access (these are
pages, and there is no audit API).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chats.filters.audit import AuditEventFilter
from chats.form_fields import IntegerFormField
from chats.models import AuditEvent
from chats.selectors.audit import (
    EXPORT_FIELDS,
    audit_chain_last_verification,
    audit_event_read,
    audit_export_rows,
    audit_page,
    csv_cell,
)
from chats.services.audit_log import audit_log_export_record
from chats.views.common import roles_of

EXPORT_FORMATS = ("ndjson", "csv")
MAX_EVENT_ID = 2**63 - 1  # a bigint: a larger cursor was not given out here
CSV_FLUSH_CHARS = 64 * 1024  # the CSV is sent in pieces of about this size


class AuditPageForm(forms.Form):
    """The list's paging: ``after`` (older than this event id) or ``before`` (newer than it)."""

    after = IntegerFormField(required=False, min_value=0, max_value=MAX_EVENT_ID)
    before = IntegerFormField(required=False, min_value=0, max_value=MAX_EVENT_ID)


class AuditExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, name) for name in EXPORT_FORMATS])


def auditor_page(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Sign-in required (else to the sign-in page), then the auditing role (else 403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not roles_of(request).can_audit:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped


def _filters(request: HttpRequest) -> AuditEventFilter:
    return AuditEventFilter(request.GET or None, queryset=AuditEvent.objects.all())


@require_GET
@auditor_page
def audit_list(request: HttpRequest) -> HttpResponse:
    filterset = _filters(request)
    paging = AuditPageForm(request.GET)
    cursor = paging.cleaned_data if paging.is_valid() else {}
    staff = bool(request.user.is_staff)
    page = audit_page(filterset.qs, after=cursor.get("after"), before=cursor.get("before"), staff=staff)
    list_query = urlencode(filterset.given_filters())
    return render(
        request,
        "chats/audit_list.html",
        {
            "filterset": filterset,
            "page": page,
            "list_query": list_query,
            "has_filters": bool(list_query),
            "verification": audit_chain_last_verification(),
            "active_nav": "audit",
        },
        using="jinja2",
    )


@require_GET
@auditor_page
def audit_event(request: HttpRequest, pk: int) -> HttpResponse:
    row = audit_event_read(pk, staff=bool(request.user.is_staff))
    if row is None:
        raise Http404("No such audit event.")
    return render(
        request,
        "chats/audit_event.html",
        {"row": row, "event": row.event, "active_nav": "audit"},
        using="jinja2",
    )


def _ndjson(rows: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    for row in rows:
        yield (json.dumps(row, ensure_ascii=False) + "\n").encode()


def _csv(rows: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_FIELDS)
    for row in rows:
        writer.writerow([csv_cell(row[name]) for name in EXPORT_FIELDS])
        if buffer.tell() >= CSV_FLUSH_CHARS:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


@require_GET
@auditor_page
def audit_export(request: HttpRequest) -> HttpResponseBase:
    """The log (with the list's filters) as NDJSON or CSV, oldest first, streamed; the export is itself audited."""
    form = AuditExportForm(request.GET)
    filterset = _filters(request)
    if not form.is_valid() or (request.GET and not filterset.is_valid()):
        return HttpResponse("Give format=ndjson or format=csv, and valid filters.", status=400)
    fmt = form.cleaned_data["format"]
    user = request.user
    assert isinstance(user, User)  # auditor_page lets only signed-in users through
    up_to = audit_log_export_record(actor=user, format=fmt, filters=filterset.given_filters())
    rows = audit_export_rows(filterset.qs, up_to=up_to)
    if fmt == "csv":
        response = StreamingHttpResponse(_csv(rows), content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(_ndjson(rows), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="audit-log.{fmt}"'
    return response
