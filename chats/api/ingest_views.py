"""Ingestion endpoints: decode and check the envelope, call the ingest service, answer with its result."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chats import ingest, strict_json
from chats.api.authentication import ApiKeyAuthentication, SourcePrincipal
from chats.api.errors import errors_response
from chats.api.serializers.common import ErrorSerializer
from chats.api.serializers.ingest import (
    BulkQueuedSerializer,
    BulkResultSerializer,
    IngestResultSerializer,
    ReceiptSerializer,
)
from chats.formats.canonical import Issue
from chats.models import ApiKey, IngestionReceipt, Outcome, Source
from chats.services.bulk_writer import conversations_ingest_bulk, cyclic_gc_paused
from chats.services.documents import document_content
from chats.services.ingest_queue import receipts_enqueue
from chats.services.ingestion import IngestResult, conversation_ingest, line_reject
from chats.services.receipts import Sender, receipt_reject_raw
from chats.throttling import IngestRateThrottle, ingest_quota_charge

JSON_TYPES = {"application/json"}
NDJSON_TYPES = {"application/x-ndjson", "application/ndjson", "application/jsonl", "application/json-lines"}


class IsSourceKey(permissions.BasePermission):
    message = "This endpoint needs a source's API key: Authorization: Api-Key <key>."

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.user, SourcePrincipal)


class _Rejected(Exception):
    def __init__(self, status_code: int, errors: list[Issue]):
        self.status_code = status_code
        self.errors = errors


def _source(request: Request) -> Source:
    principal = request.user
    assert isinstance(principal, SourcePrincipal)  # guaranteed by IsSourceKey
    return principal.source


def _api_key(request: Request) -> ApiKey | None:
    return request.auth if isinstance(request.auth, ApiKey) else None


def _media_type(request: Request) -> str:
    return (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()


def _read_body(request: Request) -> bytes:
    limit = settings.MASTERBRAIN_MAX_BODY_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise _Rejected(413, [Issue("", f"the body is {length} bytes: at most {limit} are accepted")])
    try:
        body: bytes = request._request.body
    except RequestDataTooBig:
        raise _Rejected(413, [Issue("", f"the body is over {limit} bytes")]) from None
    if len(body) > limit:
        raise _Rejected(413, [Issue("", f"the body is {len(body)} bytes: at most {limit} are accepted")])
    return body


def _decode_json(text: bytes, *, line_offset: int = 0) -> Any:
    try:
        return strict_json.loads(text)
    except strict_json.NotStrictJson as error:
        raise _Rejected(400, [Issue("", f"not valid JSON: {error}")]) from None
    except UnicodeDecodeError as error:
        raise _Rejected(400, [Issue("", f"the body is not UTF-8: {error.reason} at byte {error.start}")]) from None
    except json.JSONDecodeError as error:
        where = f"line {error.lineno + line_offset}, column {error.colno}"
        raise _Rejected(400, [Issue("", f"not valid JSON: {error.msg} at {where}")]) from None


def _check_item_count(count: int | None, limit: int) -> None:
    if count is not None and count > limit:
        raise _Rejected(413, [Issue("", f"more than {limit} documents: at most {limit} per bulk request")])


def _format_param(request: Request) -> str | None:
    value = request.query_params.get("format_name") or request.query_params.get("format")
    return value or None


def _result_body(result: IngestResult) -> dict[str, Any]:
    if not result.decoded:
        # An NDJSON line that is not JSON (chats.services.ingestion.line_reject): no id, no format.
        return {
            "external_id": None,
            "outcome": result.outcome,
            "conversation": None,
            "receipt": str(result.receipt.uuid),
            "warnings": [],
            "errors": result.errors,
        }
    body: dict[str, Any] = {
        "conversation": str(result.conversation.uuid) if result.conversation else None,
        "external_id": result.external_id,
        "outcome": result.outcome,
        "format": result.format,
        "receipt": str(result.receipt.uuid),
        "warnings": result.warnings,
    }
    if result.errors:
        body["errors"] = result.errors
    return body


def _queued_body(receipt: IngestionReceipt) -> dict[str, Any]:
    """A document stored for a worker: its receipt says what became of it once the worker has applied it."""
    return {
        "conversation": None,
        "external_id": None,
        "outcome": receipt.outcome,
        "receipt": str(receipt.uuid),
        "receipt_url": reverse("api:receipt", kwargs={"uuid": receipt.uuid}),
        "warnings": [],
    }


ASYNC_VALUES = {"": False, "false": False, "0": False, "true": True, "1": True}

FORMAT_PARAMETER = OpenApiParameter(
    "format", str, enum=list(ingest.FORMATS), description="The document's format; detected when omitted."
)


class SourceKeyView(APIView):
    # A source's key only: no session, so a signed-in person is asked for a key (401), not for a CSRF token.
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsSourceKey]


class DocumentsView(SourceKeyView):
    """Where a source sends what it records: throttled, and reading the raw body itself (no parser)."""

    throttle_classes = [IngestRateThrottle]
    parser_classes: list[Any] = []


# What every ingest endpoint may refuse, in the API's one error shape.
INGEST_ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 413, 415, 429)}


class IngestView(DocumentsView):
    """POST one conversation document."""

    @extend_schema(
        operation_id="ingest_one",
        parameters=[
            FORMAT_PARAMETER,
            OpenApiParameter("external_id", str, description="Names the conversation when the document has no id."),
        ],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            201: IngestResultSerializer,
            200: IngestResultSerializer,
            **INGEST_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        source = _source(request)
        try:
            if _media_type(request) not in JSON_TYPES:
                raise _Rejected(415, [Issue("", "send the document as Content-Type: application/json")])
            body = _read_body(request)
            # Over the key's daily quota: 429 (or 413), before anything decodes the body or stores anything.
            ingest_quota_charge(_api_key(request), len(body))
            document = _decode_json(body)
        except _Rejected as rejected:
            receipt = None
            if rejected.status_code == 400:
                receipt = receipt_reject_raw(
                    source=source, api_key=_api_key(request), body=request._request.body, errors=rejected.errors
                )
            extra = {"receipt": str(receipt.uuid)} if receipt else {}
            return errors_response([e.as_dict() for e in rejected.errors], rejected.status_code, **extra)
        result = conversation_ingest(
            source=source,
            document=document,
            format=_format_param(request),
            external_id=request.query_params.get("external_id") or None,
            api_key=_api_key(request),
            content=body,
        )
        if result.outcome == Outcome.REJECTED:
            rejected_code = 413 if result.over_limit else 400
            return Response(_result_body(result), status=rejected_code)
        return Response(_result_body(result), status=201 if result.outcome == Outcome.CREATED else 200)


class BulkIngestView(DocumentsView):
    """POST many documents: a JSON array, or newline-delimited JSON (one document per line)."""

    @extend_schema(
        operation_id="ingest_bulk",
        parameters=[
            FORMAT_PARAMETER,
            OpenApiParameter(
                "async",
                bool,
                description="true: check the envelope, store the documents and answer 202 at once, each with a "
                "receipt in the outcome `queued`; a worker applies them later, exactly as the synchronous answer "
                "would have, and GET on each receipt_url tells the outcome. Lines of NDJSON that are not JSON are "
                "rejected at once, as without it.",
            ),
        ],
        request={
            "application/json": {"type": "array", "items": {"type": "object"}},
            "application/x-ndjson": {"type": "string", "description": "One JSON document per line."},
        },
        responses={
            200: BulkResultSerializer,
            202: BulkQueuedSerializer,
            **INGEST_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        # Decoding and storing a batch allocate many objects that live until the answer and form no cycles.
        with cyclic_gc_paused():
            return self._post(request)

    def _post(self, request: Request) -> Response:
        source = _source(request)
        flag = request.query_params.get("async", "").lower()
        if flag not in ASYNC_VALUES:
            return errors_response([{"path": "", "message": "async is true or false"}], 400)
        asynchronous = ASYNC_VALUES[flag]
        media_type = _media_type(request)
        items: list[tuple[Any, Issue | None, bytes | None]]
        limit = settings.MASTERBRAIN_MAX_BULK_ITEMS
        try:
            # The documents are counted in the bytes, before any is decoded: a body of too many costs a scan. The
            # same scan finds the bytes of each document of an array, which its receipt keeps.
            if media_type in JSON_TYPES:
                data = _read_body(request)
                spans = strict_json.array_item_spans(data, stop_after=limit)
                count = len(spans) if spans is not None else strict_json.count_array_items(data, stop_after=limit)
                _check_item_count(count, limit)
                ingest_quota_charge(_api_key(request), len(data))
                document = _decode_json(data)
                if not isinstance(document, list):
                    raise _Rejected(400, [Issue("", "a bulk request is a JSON array of documents")])
                if spans is not None and len(spans) == len(document):
                    items = [(item, None, data[start:end]) for item, (start, end) in zip(document, spans, strict=True)]
                else:  # a UTF-16 or UTF-32 array: each document is kept as its canonical JSON
                    items = [(item, None, None) for item in document]
            elif media_type in NDJSON_TYPES:
                data = _read_body(request)
                _check_item_count(strict_json.count_lines(data, stop_after=limit), limit)
                ingest_quota_charge(_api_key(request), len(data))
                items = self._ndjson_items(data)
            else:
                raise _Rejected(
                    415, [Issue("", "send a JSON array (application/json) or NDJSON (application/x-ndjson)")]
                )
            _check_item_count(len(items), limit)
        except _Rejected as rejected:
            receipt = None
            if rejected.status_code == 400:  # read, but not a JSON array: kept like any other attempt
                receipt = receipt_reject_raw(
                    source=source, api_key=_api_key(request), body=request._request.body, errors=rejected.errors
                )
            extra = {"receipt": str(receipt.uuid)} if receipt else {}
            return errors_response([e.as_dict() for e in rejected.errors], rejected.status_code, **extra)

        decoded = [(document, content) for document, decode_error, content in items if decode_error is None]
        if asynchronous:
            # Stored as bytes with a queued receipt each, and applied by a worker (chats.services.ingest_queue).
            queued = receipts_enqueue(
                source=source,
                api_key=_api_key(request),
                format=_format_param(request),
                contents=[content if content is not None else document_content(doc) for doc, content in decoded],
            )
            bodies = iter(map(_queued_body, queued))
        else:
            # The documents that decoded are stored together (set-based on PostgreSQL, see
            # chats.services.bulk_writer); each still gets its own outcome and receipt, and is stored whole or not
            # at all.
            stored = conversations_ingest_bulk(
                source=source,
                documents=[document for document, _ in decoded],
                format=_format_param(request),
                api_key=_api_key(request),
                contents=[content for _, content in decoded],
            )
            bodies = iter(map(_result_body, stored))
        results = []
        counts = {outcome: 0 for outcome in Outcome.values}
        for index, (_, decode_error, line) in enumerate(items):
            if decode_error is not None:
                assert line is not None
                sender = Sender(source, _api_key(request))
                body = _result_body(line_reject(sender=sender, line=line, error=decode_error))
            else:
                body = next(bodies)
            for issue in body.get("errors", []):
                issue["path"] = f"/{index}{issue['path']}"
            results.append({"index": index, **body})
            counts[body["outcome"]] += 1
        answer = status.HTTP_202_ACCEPTED if asynchronous else status.HTTP_200_OK
        return Response({"results": results, "summary": counts}, status=answer)

    @staticmethod
    def _ndjson_items(body: bytes) -> list[tuple[Any, Issue | None, bytes | None]]:
        """(document, None, the line) for each line that decodes; (None, the error, the line) for each that does
        not."""
        items: list[tuple[Any, Issue | None, bytes | None]] = []
        for number, line in enumerate(body.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((_decode_json(line, line_offset=number - 1), None, line))
            except _Rejected as rejected:
                items.append((None, rejected.errors[0], line))
        return items


class _AsciiJSONRenderer(JSONRenderer):
    ensure_ascii = True


class ReceiptJSONRenderer(JSONRenderer):
    """JSON, and still JSON when what a receipt holds is not text: a payload that decoded to an unpaired surrogate
    (a document rejected for it) is written with every character outside ASCII escaped (``"\\ud800"``), which is
    valid JSON and decodes to exactly what was sent. Anything else renders as every other answer does."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _AsciiJSONRenderer().render(data, accepted_media_type, renderer_context)


# What reading a receipt may answer besides it: no key (401), not a source's key (403), another source's (404).
RECEIPT_ERRORS = {code: ErrorSerializer for code in (401, 403, 404)}


def _receipt(request: Request, uuid: str, *related: str) -> IngestionReceipt:
    """One of the caller's source's receipts: another source's answers 404, as one that does not exist."""
    return get_object_or_404(IngestionReceipt.objects.select_related(*related), uuid=uuid, source=_source(request))


class ReceiptView(SourceKeyView):
    renderer_classes = [ReceiptJSONRenderer]

    @extend_schema(
        operation_id="receipt_retrieve",
        responses={
            200: ReceiptSerializer,
            **RECEIPT_ERRORS,
        },
    )
    def get(self, request: Request, uuid: str) -> Response:
        receipt = _receipt(request, uuid, "conversation", "payload")
        return Response(ReceiptSerializer(receipt).data)


class ReceiptPayloadView(SourceKeyView):
    """The exact bytes a receipt's attempt sent."""

    @extend_schema(
        operation_id="receipt_payload",
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            **RECEIPT_ERRORS,
            410: ErrorSerializer,
        },
    )
    def get(self, request: Request, uuid: str) -> HttpResponse:
        receipt = _receipt(request, uuid, "payload")
        if receipt.payload is None:
            message = "the payload was removed by retention; the receipt keeps its hash and size"
            return errors_response([{"path": "", "message": message}], 410)
        response = HttpResponse(receipt.payload.content, content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="receipt-{receipt.uuid}.bin"'
        return response
