"""OpenTelemetry traces (OTLP) from instrumented applications: the module becomes a package (chats.ingest.otel.decoding
holds it whole until it is split by concern)."""

from chats.ingest.otel.decoding import (
    CALL_OPERATIONS,
    ID_ATTRIBUTES,
    TOOL_OPERATION,
    Decoded,
    ModelCall,
    OtlpError,
    Rejected,
    Span,
    SpanDocument,
    read_spans,
    span_form,
    spans_from_json,
    spans_from_protobuf,
)

__all__ = [
    "CALL_OPERATIONS",
    "ID_ATTRIBUTES",
    "TOOL_OPERATION",
    "Decoded",
    "ModelCall",
    "OtlpError",
    "Rejected",
    "Span",
    "SpanDocument",
    "read_spans",
    "span_form",
    "spans_from_json",
    "spans_from_protobuf",
]
