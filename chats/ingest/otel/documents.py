"""The spans of a request read into documents: one chat document per model call, with the call it describes, the
tool results of the trace filled in, and the conversation id when an attribute names one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chats.ingest.otel.conventions import READERS, span_form, tool_span_results
from chats.ingest.otel.spans import (
    ID_ATTRIBUTES,
    TOOL_OPERATION,
    Decoded,
    ModelCall,
    Rejected,
    Span,
    SpanDocument,
    SpanRead,
)


def read_spans(spans: list[Span], *, id_attributes: tuple[str, ...] = ()) -> Decoded:
    """One document per model call; the rest counted. ``id_attributes``: attributes that name the conversation,
    tried before ``ID_ATTRIBUTES``."""
    tool_results = tool_span_results(spans)
    calls: list[tuple[Span, str]] = []
    skipped = tool_spans = 0
    for span in spans:
        form = span_form(span)
        if form == TOOL_OPERATION:
            tool_spans += 1
        elif form:
            calls.append((span, form))
        else:
            skipped += 1
    # The tool results each trace's calls repeat in their input: those need no filling in.
    repeated: dict[str, set[str]] = {}
    readers = []
    for span, form in calls:
        reader = READERS[form](span)
        readers.append((span, form, reader))
        ids = repeated.setdefault(span.trace_id, set())
        ids.update(m["tool_call_id"] for m in reader.input if isinstance(m.get("tool_call_id"), str))
    documents: list[SpanDocument] = []
    rejected: list[Rejected] = []
    for span, form, reader in readers:
        try:
            documents.append(
                _document(
                    span, form, reader, tool_results.get(span.trace_id, {}), repeated[span.trace_id], id_attributes
                )
            )
        except _SpanRejected as error:
            rejected.append(Rejected(span.path, str(error)))
    return Decoded(documents, rejected, skipped, tool_spans, len(spans))


class _SpanRejected(Exception):
    pass


def _document(
    span: Span,
    form: str,
    read: SpanRead,
    tool_results: dict[str, dict[str, Any]],
    repeated: set[str],
    id_attributes: tuple[str, ...],
) -> SpanDocument:
    if not read.input and not read.output:
        if read.warnings:
            raise _SpanRejected(f"a GenAI span without readable messages: {'; '.join(read.warnings)}")
        raise _SpanRejected(
            "a GenAI span without messages: turn content capture on in the instrumentation "
            "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)"
        )
    started = _moment(span.start_ns)
    ended = _moment(span.end_ns)
    latency = (span.end_ns - span.start_ns) // 1_000_000 if span.start_ns and span.end_ns >= span.start_ns else None
    operation = span.attributes.get("gen_ai.operation.name")
    call = ModelCall(
        form=form,
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        operation=operation if isinstance(operation, str) else "chat",
        provider=read.provider,
        request_model=read.request_model,
        response_model=read.response_model,
        response_id=read.response_id,
        started_at=started,
        ended_at=ended,
        latency_ms=latency,
        input_tokens=read.input_tokens,
        output_tokens=read.output_tokens,
        finish_reasons=read.finish_reasons,
        settings=read.settings,
    )
    output = [dict(message) for message in read.output]
    warnings = list(read.warnings)
    if len(output) > 1 and all(message.get("role") == "assistant" for message in output):
        # Several choices (n > 1) answer the same input: the first continues the chat, the others are kept with it.
        output[0]["other_choices"] = output[1:]
        output = output[:1]
        warnings.append("several choices: the first continues the conversation, the others are kept in other_choices")
    if output:
        output[-1]["otel"] = call.as_json()
    messages = read.input + output
    # Tool results the trace's execute_tool spans give, for the calls of this output no later call repeats.
    for message in output:
        for tool_call in message.get("tool_calls", []):
            call_id = tool_call.get("id") if isinstance(tool_call, dict) else None
            if isinstance(call_id, str) and call_id in tool_results and call_id not in repeated:
                messages.append(tool_results[call_id])
    if not messages:
        raise _SpanRejected("the span's messages are empty")
    model: dict[str, Any] = {}
    name = read.request_model or read.response_model
    if name:
        model["name"] = name
    if read.provider:
        model["provider"] = read.provider
    if read.response_model and read.response_model != name:
        model["response_model"] = read.response_model
    model.update({key: value for key, value in read.settings.items() if key not in model})
    document: dict[str, Any] = {"main_messages": messages}
    if model:
        document["model"] = model
    if read.tools:
        document["tools"] = read.tools
    conversation_id = _conversation_id(span, id_attributes)
    if conversation_id:
        document["conversation_id"] = conversation_id
    if span.unreadable:
        warnings.append(f"attributes left out (their values are not OTLP values): {', '.join(span.unreadable)}")
    output_index = len(read.input) + len(output) - 1 if output else -1
    return SpanDocument(span.path, document, call, output_index, warnings)


def _conversation_id(span: Span, id_attributes: tuple[str, ...]) -> str:
    for key in (*id_attributes, *ID_ATTRIBUTES):
        value = span.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value:
            return value
    return ""


def _moment(nanoseconds: int) -> datetime | None:
    if nanoseconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(nanoseconds / 1e9, UTC)
    except (OverflowError, ValueError, OSError):
        return None
