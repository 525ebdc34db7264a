"""OTLP/HTTP trace ingestion: ``POST /api/v1/otel/v1/traces``, so that ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointed at
``/api/v1/otel`` sends an instrumented application's model calls here.

Authenticated, throttled, size-limited and charged to the key's daily quota exactly as the other ingest endpoints
(``chats.api.ingest_views``); the body is protobuf or OTLP/JSON, optionally gzipped. The spans are read by
``chats.ingest.otel`` and stored by ``chats.services.otel`` through the bulk writer. The answer is OTLP's
``ExportTraceServiceResponse`` in the request's encoding: ``partial_success`` counts the spans refused and says
why, and also says how many spans were not GenAI spans (skipped, never stored). An OTLP/JSON answer adds the
bulk endpoint's per-document ``results`` (outcome, conversation, receipt) and a ``summary``. A body that is not
OTLP is a 400 whose body is a ``google.rpc.Status`` (in JSON also with this API's ``errors`` list).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request

from chats import strict_json
from chats.api.ingest_views import DocumentsView, _api_key, _media_type, _read_body, _Rejected, _result_body, _source
from chats.api.serializers.common import ErrorSerializer
from chats.formats.canonical import Issue
from chats.ingest import otel as otel_format
from chats.models import Outcome
from chats.services.otel import otel_traces_ingest
from chats.services.receipts import receipt_reject_raw
from chats.throttling import ingest_quota_charge

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# A header naming the span attributes that hold the conversation id, tried before gen_ai.conversation.id and
# session.id (OTEL_EXPORTER_OTLP_HEADERS="Authorization=Api-Key ...,X-Masterbrain-Conversation-Attribute=app.chat").
CONVERSATION_ATTRIBUTE_HEADER = "HTTP_X_MASTERBRAIN_CONVERSATION_ATTRIBUTE"
# google.rpc.Code values for the Status of a refused request.
_RPC_CODES = {400: 3, 413: 8, 415: 3}


def _status_bytes(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` message in protobuf (field 1: code, field 2: message)."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _refused(status: int, errors: list[Issue], media_type: str, receipt: str | None = None) -> HttpResponse:
    message = "; ".join(f"{e.path}: {e.message}" if e.path else e.message for e in errors)
    code = _RPC_CODES.get(status, 3)
    if media_type == PROTOBUF:
        return HttpResponse(_status_bytes(code, message), status=status, content_type=PROTOBUF)
    body: dict[str, Any] = {"code": code, "message": message, "errors": [e.as_dict() for e in errors]}
    if receipt:
        body["receipt"] = receipt
    return HttpResponse(json.dumps(body, ensure_ascii=False), status=status, content_type=JSON)


def _decompress(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise _Rejected(415, [Issue("", f"Content-Encoding {encoding!r} is not accepted: send gzip or none")])
    limit = settings.MASTERBRAIN_MAX_BODY_BYTES
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise _Rejected(400, [Issue("", f"the body is not valid gzip: {error}")]) from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise _Rejected(413, [Issue("", f"the decompressed body is over {limit} bytes")])
    if not inflater.eof:
        raise _Rejected(400, [Issue("", "the gzip body is cut short")])
    return data


def _spans(data: bytes, media_type: str) -> list[otel_format.Span]:
    try:
        if media_type == PROTOBUF:
            return otel_format.spans_from_protobuf(data)
        try:
            document = strict_json.loads(data)
        except UnicodeDecodeError as error:
            raise _Rejected(400, [Issue("", f"the body is not UTF-8: {error.reason} at byte {error.start}")]) from None
        except ValueError as error:
            raise _Rejected(400, [Issue("", f"not valid JSON: {error}")]) from None
        return otel_format.spans_from_json(document)
    except otel_format.OtlpError as error:
        raise _Rejected(400, [Issue("", str(error))]) from None


class OtelTracesView(DocumentsView):
    """POST an OTLP ``ExportTraceServiceRequest``: each model call's span becomes a document for the planner."""

    @extend_schema(
        operation_id="otel_traces",
        parameters=[
            OpenApiParameter(
                "X-Masterbrain-Conversation-Attribute",
                str,
                location=OpenApiParameter.HEADER,
                description="Span attributes (comma-separated) that name the conversation, tried before "
                "gen_ai.conversation.id and session.id.",
            )
        ],
        request={PROTOBUF: OpenApiTypes.BINARY, JSON: OpenApiTypes.OBJECT},
        responses={
            **{(code, JSON): OpenApiTypes.OBJECT for code in (200, 400, 413, 415)},
            **{(code, PROTOBUF): OpenApiTypes.BINARY for code in (200, 400, 413, 415)},
            401: ErrorSerializer,
            403: ErrorSerializer,
            429: ErrorSerializer,
        },
    )
    def post(self, request: Request) -> HttpResponse:
        source = _source(request)
        media_type = _media_type(request)
        answer_type = PROTOBUF if media_type == PROTOBUF else JSON
        try:
            if media_type not in (PROTOBUF, JSON):
                raise _Rejected(415, [Issue("", f"send {PROTOBUF} or {JSON} (OTLP/HTTP)")])
            body = _read_body(request)
            encoding = (request.META.get("HTTP_CONTENT_ENCODING") or "").strip().lower()
            data = _decompress(body, encoding)
            # Over the key's daily quota: 429 (or 413), before anything decodes the spans or stores anything.
            ingest_quota_charge(_api_key(request), len(data))
            header = request.META.get(CONVERSATION_ATTRIBUTE_HEADER) or ""
            id_attributes = tuple(name.strip() for name in header.split(",") if name.strip())
            decoded = otel_format.read_spans(_spans(data, media_type), id_attributes=id_attributes)
            limit = settings.MASTERBRAIN_MAX_BULK_ITEMS
            if len(decoded.documents) > limit:
                raise _Rejected(
                    413,
                    [
                        Issue(
                            "",
                            f"{len(decoded.documents)} model-call spans: at most {limit} per request "
                            "(lower the exporter's batch size, OTEL_BSP_MAX_EXPORT_BATCH_SIZE)",
                        )
                    ],
                )
        except _Rejected as rejected:
            receipt = None
            if rejected.status_code == 400:  # read, but not OTLP: kept like any other attempt
                receipt = receipt_reject_raw(
                    source=source, api_key=_api_key(request), body=request._request.body, errors=rejected.errors
                )
            return _refused(rejected.status_code, rejected.errors, answer_type, str(receipt.uuid) if receipt else None)
        result = otel_traces_ingest(source=source, decoded=decoded, api_key=_api_key(request))
        reasons = [f"{r.path}: {r.message}" for r in decoded.rejected]
        for document, stored in zip(decoded.documents, result.results, strict=True):
            if stored.outcome == Outcome.REJECTED:
                reasons.extend(f"{document.path}{e['path']}: {e['message']}" for e in stored.errors)
        if decoded.skipped:
            reasons.append(f"{decoded.skipped} spans are not GenAI model calls: skipped, not stored")
        message = "; ".join(reasons)
        if answer_type == PROTOBUF:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

            response = ExportTraceServiceResponse()
            if message or result.rejected:
                response.partial_success.rejected_spans = result.rejected
                # Protobuf strings are UTF-8: what a span quoted that UTF-8 cannot hold is shown escaped.
                response.partial_success.error_message = message.encode(errors="backslashreplace").decode()
            return HttpResponse(response.SerializeToString(), content_type=PROTOBUF)
        results = []
        counts = {outcome: 0 for outcome in Outcome.values}
        for document, stored in zip(decoded.documents, result.results, strict=True):
            body_of = _result_body(stored)
            for issue in body_of.get("errors", []):
                issue["path"] = f"{document.path}{issue['path']}"
            body_of["warnings"] = [
                *body_of["warnings"],
                *({"path": document.path, "message": w} for w in document.warnings),
            ]
            results.append(
                {"span": document.path, "trace_id": document.call.trace_id, "span_id": document.call.span_id, **body_of}
            )
            counts[stored.outcome] += 1
        answer: dict[str, Any] = {
            "results": results,
            "summary": {**counts, "skipped_spans": decoded.skipped, "tool_spans": decoded.tool_spans},
        }
        if message or result.rejected:
            answer["partialSuccess"] = {"rejectedSpans": str(result.rejected), "errorMessage": message}
        # ASCII-escaped: an error quoting a span's lone surrogate stays valid JSON (as "\\ud800").
        return HttpResponse(json.dumps(answer), content_type=JSON)
