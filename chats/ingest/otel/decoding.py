"""OTLP request bodies to spans: the protobuf ``ExportTraceServiceRequest`` (``opentelemetry-proto``) and OTLP's
JSON mapping of it. Attribute values become JSON values; what cannot be read is named in ``Span.unreadable``."""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from chats.ingest.otel.spans import OtlpError, Span


def spans_from_protobuf(body: bytes) -> list[Span]:
    """The spans of a protobuf ``ExportTraceServiceRequest``; OtlpError when the bytes are not one."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as error:
        raise OtlpError(f"not an OTLP ExportTraceServiceRequest: {error}") from None
    spans = []
    for r, resource_spans in enumerate(request.resource_spans):
        resource = _proto_attributes(resource_spans.resource.attributes, [])
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope.name
            for n, span in enumerate(scope_spans.spans):
                unreadable: list[str] = []
                spans.append(
                    Span(
                        trace_id=_proto_id(span.trace_id),
                        span_id=_proto_id(span.span_id),
                        parent_span_id=_proto_id(span.parent_span_id),
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=_proto_attributes(span.attributes, unreadable),
                        resource=resource,
                        scope=scope,
                        path=f"/resourceSpans/{r}/scopeSpans/{s}/spans/{n}",
                        unreadable=unreadable,
                    )
                )
    return spans


def _proto_id(value: bytes) -> str:
    """A trace or span id as lowercase hex (16 and 8 bytes in OTLP; longer ones are no id)."""
    return value.hex() if len(value) <= 32 else ""


def _proto_attributes(attributes: Any, unreadable: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in attributes:
        values[attribute.key] = _proto_value(attribute.value, 0)
    return values


def _proto_value(value: Any, depth: int) -> Any:
    kind = value.WhichOneof("value")
    if kind is None or depth > 32:
        return None
    if kind == "array_value":
        return [_proto_value(item, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _proto_value(item.value, depth + 1) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if kind == "double_value":
        return _finite(value.double_value)
    return getattr(value, kind)


def _finite(number: float) -> float | str:
    """JSON holds no NaN or infinity: such a value is kept as its text."""
    return number if math.isfinite(number) else repr(number)


def spans_from_json(document: object) -> list[Span]:
    """The spans of an ``ExportTraceServiceRequest`` in OTLP's JSON mapping; OtlpError when it has not that shape.

    A span whose own fields are unreadable is still returned (its ids empty) so that it is counted; an attribute
    whose value is not an ``AnyValue`` is left out, and named in ``Span.unreadable``.
    """
    if not isinstance(document, dict):
        raise OtlpError("an OTLP/JSON body is an object with a 'resourceSpans' list")
    resource_list = document.get("resourceSpans", document.get("resource_spans", []))
    if not isinstance(resource_list, list):
        raise OtlpError("/resourceSpans must be a list")
    spans = []
    for r, resource_spans in enumerate(resource_list):
        if not isinstance(resource_spans, dict):
            raise OtlpError(f"/resourceSpans/{r} must be an object")
        resource_object = resource_spans.get("resource")
        resource = _json_attributes(resource_object.get("attributes"), []) if isinstance(resource_object, dict) else {}
        scope_list = resource_spans.get("scopeSpans", resource_spans.get("scope_spans", []))
        if not isinstance(scope_list, list):
            raise OtlpError(f"/resourceSpans/{r}/scopeSpans must be a list")
        for s, scope_spans in enumerate(scope_list):
            if not isinstance(scope_spans, dict):
                raise OtlpError(f"/resourceSpans/{r}/scopeSpans/{s} must be an object")
            scope_object = scope_spans.get("scope")
            scope_name = scope_object.get("name") if isinstance(scope_object, dict) else None
            span_list = scope_spans.get("spans", [])
            if not isinstance(span_list, list):
                raise OtlpError(f"/resourceSpans/{r}/scopeSpans/{s}/spans must be a list")
            for n, span in enumerate(span_list):
                path = f"/resourceSpans/{r}/scopeSpans/{s}/spans/{n}"
                if not isinstance(span, dict):
                    raise OtlpError(f"{path} must be an object")
                unreadable: list[str] = []
                spans.append(
                    Span(
                        trace_id=_json_id(span.get("traceId", span.get("trace_id"))),
                        span_id=_json_id(span.get("spanId", span.get("span_id"))),
                        parent_span_id=_json_id(span.get("parentSpanId", span.get("parent_span_id"))),
                        name=_text(span.get("name")),
                        start_ns=json_int(span.get("startTimeUnixNano", span.get("start_time_unix_nano"))) or 0,
                        end_ns=json_int(span.get("endTimeUnixNano", span.get("end_time_unix_nano"))) or 0,
                        attributes=_json_attributes(span.get("attributes"), unreadable),
                        resource=resource,
                        scope=_text(scope_name),
                        path=path,
                        unreadable=unreadable,
                    )
                )
    return spans


_HEX_ID = re.compile(r"[0-9a-fA-F]{1,64}")


def _json_id(value: object) -> str:
    """Trace and span ids are hex in OTLP/JSON; anything else is no id."""
    if isinstance(value, str) and _HEX_ID.fullmatch(value):
        return value.lower()
    return ""


def json_int(value: object) -> int | None:
    """A 64-bit integer of the JSON mapping: a number or its decimal text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and 0 < len(value) <= 20:
        text = value[1:] if value[0] == "-" else value
        if text.isascii() and text.isdigit():
            return int(value)
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _json_attributes(attributes: object, unreadable: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if not isinstance(attributes, list):
        return values
    for attribute in attributes:
        if not isinstance(attribute, dict) or not isinstance(attribute.get("key"), str):
            unreadable.append("")
            continue
        ok, value = _json_value(attribute.get("value"), 0)
        if ok:
            values[attribute["key"]] = value
        else:
            unreadable.append(attribute["key"])
    return values


_MISSING: Any = object()


def _json_value(value: object, depth: int) -> tuple[bool, Any]:
    """(readable, value) of an AnyValue in the JSON mapping."""
    if not isinstance(value, dict) or depth > 32:
        return False, None
    if not value:
        return True, None
    if "stringValue" in value:
        return isinstance(value["stringValue"], str), _text(value["stringValue"])
    if "boolValue" in value:
        return isinstance(value["boolValue"], bool), value["boolValue"] is True
    if "intValue" in value:
        number = json_int(value["intValue"])
        return number is not None, number
    if "doubleValue" in value:
        double = value["doubleValue"]
        if isinstance(double, bool) or not isinstance(double, int | float | str):
            return False, None
        try:
            return True, _finite(float(double))
        except (ValueError, OverflowError):
            return False, None
    if "bytesValue" in value:
        data = value["bytesValue"]
        if not isinstance(data, str):
            return False, None
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return False, None
        return True, data
    if "arrayValue" in value:
        array = value["arrayValue"]
        items = array.get("values", []) if isinstance(array, dict) else _MISSING
        if not isinstance(items, list):
            return False, None
        converted = []
        for item in items:
            ok, item_value = _json_value(item, depth + 1)
            if not ok:
                return False, None
            converted.append(item_value)
        return True, converted
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        entries = kvlist.get("values", []) if isinstance(kvlist, dict) else _MISSING
        if not isinstance(entries, list):
            return False, None
        mapping: dict[str, Any] = {}
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
                return False, None
            ok, entry_value = _json_value(entry.get("value"), depth + 1)
            if not ok:
                return False, None
            mapping[entry["key"]] = entry_value
        return True, mapping
    return False, None
