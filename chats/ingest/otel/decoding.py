"""OpenTelemetry traces (OTLP) from instrumented applications: each model call becomes a conversation document.

Pure Python: no Django, no database. ``spans_from_protobuf`` decodes an ``ExportTraceServiceRequest`` body with
``opentelemetry-proto``; ``spans_from_json`` reads OTLP's JSON mapping; both give ``Span`` values, and
``read_spans`` turns the spans into one ``SpanDocument`` per model call (design notes §3, rule 5).

A span's document is a ``chat_document`` (``chats.ingest.chat_document``), so that it takes the planner's path like
any other document: the call's input messages and then its output, the model object with the request settings,
the tools offered under ``tools``, and the conversation id when an attribute names one (``gen_ai.conversation.id``,
``session.id``, or an attribute the client names). Without one, content keys place each call in the conversation
whose history it continues, so that the calls of one chat become one growing conversation. The call itself (trace
and span ids, times, token usage, finish reasons, provider) is kept on its output message under ``otel``, an unknown
key the chat document keeps verbatim in the message's ``extra``; ``SpanDocument.call`` gives the same values typed.

Three forms are read (see the README, "Send from an instrumented application"):

1. the GenAI semantic conventions: ``gen_ai.input.messages``, ``gen_ai.output.messages`` and
   ``gen_ai.system_instructions`` (JSON text of messages with typed parts), ``gen_ai.tool.definitions``,
   ``gen_ai.request.*``, ``gen_ai.response.*``, ``gen_ai.usage.*``, and ``execute_tool`` spans, whose results fill
   in the tool messages no later call of the trace repeats;
2. OpenInference: ``llm.input_messages.N.message.*``, ``llm.output_messages.N.message.*``, ``llm.model_name``,
   ``llm.invocation_parameters``, ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``, ``session.id``;
3. OpenLLMetry: ``gen_ai.prompt.N.*`` and ``gen_ai.completion.N.*`` with their tool calls, and
   ``llm.request.functions.N.*``.

Spans that are none of these are counted in ``Decoded.skipped`` and never stored. JSON held in an attribute is
read through ``chats.storable.parsed_if_storable``: the parsed form only when it can be stored; otherwise the text
is kept as it came.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chats import jsonio
from chats.storable import parsed_if_storable, unstorable

# Operations whose spans are model calls (gen_ai.operation.name).
CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATION = "execute_tool"
# Attributes that name the conversation, by preference (design notes §3, rule 1).
ID_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")
# gen_ai.request.* attributes that are not settings of the call.
_NOT_SETTINGS = frozenset({"gen_ai.request.model"})


class OtlpError(Exception):
    """The request as a whole cannot be read (not OTLP): answered with a 400."""


@dataclass(slots=True)
class Span:
    trace_id: str  # lowercase hex, "" when absent
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    path: str  # JSON pointer of the span in the request's JSON form
    unreadable: list[str] = field(default_factory=list)  # attribute keys whose value could not be read


@dataclass(slots=True)
class ModelCall:
    """One model call as the span states it: what ``chats.models.ModelCall`` stores."""

    form: str  # "genai", "openinference" or "openllmetry"
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    operation: str
    provider: str
    request_model: str
    response_model: str
    response_id: str
    started_at: datetime | None
    ended_at: datetime | None
    latency_ms: int | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reasons: list[str]
    settings: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The call as stored in its output message's ``otel`` key (times as ISO 8601 text)."""
        value: dict[str, Any] = {
            "form": self.form,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "name": self.name,
            "operation": self.operation,
            "provider": self.provider,
            "request_model": self.request_model,
            "response_model": self.response_model,
            "response_id": self.response_id,
            "start_time": self.started_at.isoformat() if self.started_at else None,
            "end_time": self.ended_at.isoformat() if self.ended_at else None,
            "latency_ms": self.latency_ms,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reasons": self.finish_reasons,
        }
        return value


@dataclass(slots=True)
class SpanDocument:
    """A model call's span as a chat document, with the call it describes."""

    path: str  # the span's JSON pointer
    document: dict[str, Any]
    call: ModelCall
    output_index: int  # the position of the call's last output message among the document's messages (-1: none)
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Rejected:
    path: str
    message: str


@dataclass(slots=True)
class Decoded:
    documents: list[SpanDocument]
    rejected: list[Rejected]
    skipped: int  # spans that are not GenAI spans (HTTP, database...), never stored
    tool_spans: int  # execute_tool spans (their results fill in tool messages)
    span_count: int


# --- decoding ---------------------------------------------------------------------------------------------------


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


def spans_from_json(document: Any) -> list[Span]:
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
                        start_ns=_json_int(span.get("startTimeUnixNano", span.get("start_time_unix_nano"))) or 0,
                        end_ns=_json_int(span.get("endTimeUnixNano", span.get("end_time_unix_nano"))) or 0,
                        attributes=_json_attributes(span.get("attributes"), unreadable),
                        resource=resource,
                        scope=_text(scope_name),
                        path=path,
                        unreadable=unreadable,
                    )
                )
    return spans


_HEX_ID = re.compile(r"[0-9a-fA-F]{1,64}")


def _json_id(value: Any) -> str:
    """Trace and span ids are hex in OTLP/JSON; anything else is no id."""
    if isinstance(value, str) and _HEX_ID.fullmatch(value):
        return value.lower()
    return ""


def _json_int(value: Any) -> int | None:
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


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _json_attributes(attributes: Any, unreadable: list[str]) -> dict[str, Any]:
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


def _json_value(value: Any, depth: int) -> tuple[bool, Any]:
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
        number = _json_int(value["intValue"])
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


# --- reading the spans ------------------------------------------------------------------------------------------


def read_spans(spans: list[Span], *, id_attributes: tuple[str, ...] = ()) -> Decoded:
    """One document per model call; the rest counted. ``id_attributes``: attributes that name the conversation,
    tried before ``ID_ATTRIBUTES``."""
    tool_results = _tool_results(spans)
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
        reader = _READERS[form](span)
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


def span_form(span: Span) -> str:
    """Which form a span's model call is in ("genai", "openinference", "openllmetry"), TOOL_OPERATION for a tool
    execution, or "" for a span that is no GenAI span."""
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    if operation == TOOL_OPERATION:
        return TOOL_OPERATION
    if "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        return "genai"
    if attributes.get("openinference.span.kind") == "LLM" or any(
        key.startswith(("llm.input_messages.", "llm.output_messages.")) for key in attributes
    ):
        return "openinference"
    if any(key.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for key in attributes):
        return "openllmetry"
    if isinstance(operation, str) and operation in CALL_OPERATIONS:
        return "genai"  # a call whose content was not captured: rejected with the reason
    return ""


class _SpanRejected(Exception):
    pass


def _tool_results(spans: list[Span]) -> dict[str, dict[str, dict[str, Any]]]:
    """trace id -> tool call id -> the tool message an execute_tool span gives."""
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for span in spans:
        attributes = span.attributes
        if attributes.get("gen_ai.operation.name") != TOOL_OPERATION:
            continue
        call_id = attributes.get("gen_ai.tool.call.id")
        result = attributes.get("gen_ai.tool.call.result")
        if not isinstance(call_id, str) or not call_id or result is None:
            continue
        message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": _json_text(result)}
        name = attributes.get("gen_ai.tool.name")
        if isinstance(name, str) and name:
            message["name"] = name
        message["otel"] = {"trace_id": span.trace_id, "span_id": span.span_id}
        results.setdefault(span.trace_id, {})[call_id] = message
    return results


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(slots=True)
class _Read:
    """What a form's reader found in a span: OpenAI-style messages, tools and settings."""

    input: list[dict[str, Any]] = field(default_factory=list)
    output: list[dict[str, Any]] = field(default_factory=list)
    tools: list[Any] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    provider: str = ""
    request_model: str = ""
    response_model: str = ""
    response_id: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _document(
    span: Span,
    form: str,
    read: _Read,
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


_INT64 = 2**63


def _int(value: Any) -> int | None:
    """A count (tokens): a non-negative integer that a 64-bit column holds, else None."""
    number: int | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        number = _json_int(value)
    return number if number is not None and 0 <= number < _INT64 else None


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _json_attribute(value: Any) -> Any:
    """An attribute that holds JSON text: its parsed value when storable, else the text as it came (None: absent)."""
    if isinstance(value, str):
        parsed = parsed_if_storable(value)
        return parsed if parsed is not None else value
    return value


def _unstorable_json(text: str) -> str:
    """Why JSON text could not be read as a value to store (", it holds ..."), or "" when it is not JSON at all."""
    try:
        value = jsonio.loads(text)
    except ValueError:
        return ""
    found = unstorable(value)
    return f" (its JSON cannot be stored: {found.reason} at {found.pointer or '/'})" if found is not None else ""


def _arguments_text(arguments: Any) -> str:
    """Tool call arguments as the text OpenAI-style messages carry (an object is written as compact JSON)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


# --- form 1: the GenAI semantic conventions ---------------------------------------------------------------------


def _read_genai(span: Span) -> _Read:
    attributes = span.attributes
    read = _Read()
    _common_genai(attributes, read)
    system = _json_attribute(attributes.get("gen_ai.system_instructions"))
    inputs = _json_attribute(attributes.get("gen_ai.input.messages"))
    outputs = _json_attribute(attributes.get("gen_ai.output.messages"))
    if system is not None:
        parts = system if isinstance(system, list) else [system]
        content = _genai_parts(parts, {}, read, "gen_ai.system_instructions")
        has_system = isinstance(inputs, list) and any(isinstance(m, dict) and m.get("role") == "system" for m in inputs)
        if not has_system:
            read.input.append({"role": "system", "content": content["content"]})
    for key, value, target in (
        ("gen_ai.input.messages", inputs, read.input),
        ("gen_ai.output.messages", outputs, read.output),
    ):
        if value is None:
            continue
        if not isinstance(value, list):
            why = _unstorable_json(value) if isinstance(value, str) else ""
            read.warnings.append(f"{key} is not a JSON list of messages{why}; kept in the model object")
            read.settings[key] = value
            continue
        for index, message in enumerate(value):
            target.extend(_genai_message(message, read, f"{key}/{index}"))
    tools = _json_attribute(attributes.get("gen_ai.tool.definitions"))
    if isinstance(tools, list):
        read.tools = tools
    elif tools is not None:
        read.settings["gen_ai.tool.definitions"] = tools
    return read


def _common_genai(attributes: dict[str, Any], read: _Read) -> None:
    """Attributes the GenAI conventions and OpenLLMetry share."""
    read.provider = _str(attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system"))
    read.request_model = _str(attributes.get("gen_ai.request.model"))
    read.response_model = _str(attributes.get("gen_ai.response.model"))
    read.response_id = _str(attributes.get("gen_ai.response.id"))
    read.input_tokens = _int(attributes.get("gen_ai.usage.input_tokens", attributes.get("gen_ai.usage.prompt_tokens")))
    read.output_tokens = _int(
        attributes.get("gen_ai.usage.output_tokens", attributes.get("gen_ai.usage.completion_tokens"))
    )
    reasons = attributes.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, str):
        reasons = [reasons]
    if isinstance(reasons, list):
        read.finish_reasons = [reason for reason in reasons if isinstance(reason, str)]
    for key, value in attributes.items():
        if (
            key.startswith("gen_ai.request.")
            and key not in _NOT_SETTINGS
            and not key.startswith("gen_ai.request.functions.")
        ):
            read.settings[key.removeprefix("gen_ai.request.")] = value


def _genai_message(message: Any, read: _Read, where: str) -> list[dict[str, Any]]:
    """OpenAI-style messages of one GenAI-conventions message (one per tool result part it holds)."""
    if not isinstance(message, dict):
        read.warnings.append(f"{where} is not a message object; left out")
        return []
    role = message.get("role")
    if not isinstance(role, str) or not role:
        read.warnings.append(f"{where} has no role; left out")
        return []
    parts = message.get("parts")
    extra = {key: value for key, value in message.items() if key not in ("role", "parts")}
    if not isinstance(parts, list):
        parts = [] if parts is None else [parts]
    results: list[dict[str, Any]] = []
    converted = _genai_parts(parts, extra, read, where, results=results)
    messages = []
    if converted["content"] is not None or converted["tool_calls"] or converted["reasoning"] or not results:
        out: dict[str, Any] = {"role": role, "content": converted["content"]}
        if converted["tool_calls"]:
            out["tool_calls"] = converted["tool_calls"]
        if converted["reasoning"]:
            out["reasoning_content"] = converted["reasoning"]
        out.update(extra)
        messages.append(out)
    for result in results:
        messages.append({"role": "tool", **result})
    return messages


def _genai_parts(
    parts: list[Any],
    extra: dict[str, Any],
    read: _Read,
    where: str,
    *,
    results: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """OpenAI-style content, tool calls and reasoning from typed parts; tool results are added to ``results``."""
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for part in parts:
        if isinstance(part, str):
            content.append({"type": "text", "text": part})
            continue
        if not isinstance(part, dict):
            read.warnings.append(f"{where}: a part that is not an object; kept verbatim")
            content.append({"type": "unknown_part", "value": part})
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            content.append({"type": "text", "text": part["content"]})
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            call: dict[str, Any] = {
                "id": _str(part.get("id")),
                "type": "function",
                "function": {"name": part["name"], "arguments": _arguments_text(part.get("arguments"))},
            }
            calls.append(call)
        elif kind == "tool_call_response" and results is not None:
            response = part.get("response", part.get("result"))
            results.append({"tool_call_id": _str(part.get("id")), "content": _content_value(response)})
        elif kind == "reasoning" and isinstance(part.get("content"), str):
            reasoning.append(part["content"])
        elif kind in ("blob", "uri", "file"):
            content.append(_media_part(part))
        else:
            content.append(part)  # kept verbatim: an unknown part of the canonical form
    value: Any
    if not content:
        value = None
    elif len(content) == 1 and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
        value = content[0]["text"]
    else:
        value = content
    return {"content": value, "tool_calls": calls, "reasoning": "\n\n".join(reasoning)}


def _content_value(response: Any) -> Any:
    """A tool result's content: text as it came, anything else as its JSON text."""
    if response is None:
        return ""
    return _json_text(response)


def _media_part(part: dict[str, Any]) -> dict[str, Any]:
    """A blob, URI or file part of the GenAI conventions as an OpenAI-style part (the original when it is none)."""
    modality = part.get("modality")
    mime = _str(part.get("mime_type"))
    kind = part.get("type")
    if kind == "uri" and isinstance(part.get("uri"), str):
        if modality == "image":
            return {"type": "image_url", "image_url": {"url": part["uri"]}}
        if modality == "audio":
            return {"type": "audio_url", "audio_url": part["uri"]}
    if kind == "blob" and isinstance(part.get("content"), str):
        if modality == "image":
            return {"type": "image_url", "image_url": {"url": f"data:{mime or 'image/*'};base64,{part['content']}"}}
        if modality == "audio":
            audio: dict[str, Any] = {"data": part["content"]}
            if mime.startswith("audio/"):
                audio["format"] = mime.removeprefix("audio/")
            return {"type": "input_audio", "input_audio": audio}
        return {"type": "file", "file": {"file_data": part["content"]}}
    if kind == "file" and isinstance(part.get("file_id"), str):
        return {"type": "file", "file": {"file_id": part["file_id"]}}
    return part


# --- form 2: OpenInference --------------------------------------------------------------------------------------


def _flat_tool_calls(flat: dict[str, Any], prefix: str, *, id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    """The OpenAI-style tool calls of a message written as flattened, indexed attributes (OpenInference's and
    OpenLLMetry's spellings differ only in the attribute names); a call without a name is left out."""
    calls = []
    for call in _indexed(flat, prefix):
        called = call.get(name)
        if isinstance(called, str):
            calls.append(
                {
                    "id": _str(call.get(id)),
                    "type": "function",
                    "function": {"name": called, "arguments": _arguments_text(call.get(arguments))},
                }
            )
    return calls


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as a list of ``{rest: value}`` objects, in the order of N."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index_text, _, rest = key[len(prefix) :].partition(".")
        if not (index_text.isascii() and index_text.isdigit()) or len(index_text) > 6 or not rest:
            continue
        groups.setdefault(int(index_text), {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def _read_openinference(span: Span) -> _Read:
    attributes = span.attributes
    read = _Read()
    read.provider = _str(attributes.get("llm.provider") or attributes.get("llm.system"))
    # llm.model_name is the model that answered; the one asked for is in the invocation parameters.
    read.request_model = read.response_model = _str(attributes.get("llm.model_name"))
    read.input_tokens = _int(attributes.get("llm.token_count.prompt"))
    read.output_tokens = _int(attributes.get("llm.token_count.completion"))
    parameters = _json_attribute(attributes.get("llm.invocation_parameters"))
    if isinstance(parameters, dict):
        read.settings = {key: value for key, value in parameters.items() if key not in ("model", "messages", "tools")}
        if isinstance(parameters.get("model"), str) and parameters["model"]:
            read.request_model = parameters["model"]
    elif parameters is not None:
        read.settings["llm.invocation_parameters"] = parameters
    reason = attributes.get("llm.finish_reason")
    if isinstance(reason, str):
        read.finish_reasons = [reason]
    output_value = _json_attribute(attributes.get("output.value"))
    if isinstance(output_value, dict):
        read.response_id = _str(output_value.get("id"))
        read.response_model = _str(output_value.get("model")) or read.response_model
        choices = output_value.get("choices")
        if not read.finish_reasons and isinstance(choices, list):
            read.finish_reasons = [
                choice["finish_reason"]
                for choice in choices
                if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
            ]
    for prefix, target in (("llm.input_messages.", read.input), ("llm.output_messages.", read.output)):
        for flat in _indexed(attributes, prefix):
            message = _openinference_message(flat, read, prefix)
            if message is not None:
                target.append(message)
    for tool in _indexed(attributes, "llm.tools."):
        schema = tool.get("tool.json_schema")
        read.tools.append(_json_attribute(schema) if schema is not None else tool)
    return read


_OPENINFERENCE_KEYS = frozenset({"message.role", "message.content", "message.name", "message.tool_call_id"})


def _openinference_message(flat: dict[str, Any], read: _Read, where: str) -> dict[str, Any] | None:
    role = flat.get("message.role")
    if not isinstance(role, str) or not role:
        read.warnings.append(f"{where}: a message without message.role; left out")
        return None
    message: dict[str, Any] = {"role": role}
    contents = _indexed(flat, "message.contents.")
    if "message.content" in flat:
        message["content"] = _str(flat["message.content"]) if flat["message.content"] is not None else None
    elif contents:
        parts: list[Any] = []
        for item in contents:
            kind = item.get("message_content.type")
            if kind == "text":
                parts.append({"type": "text", "text": _str(item.get("message_content.text"))})
            elif kind == "image":
                parts.append(
                    {"type": "image_url", "image_url": {"url": _str(item.get("message_content.image.image.url"))}}
                )
            else:
                parts.append({"type": "unknown_part", "value": item})
        message["content"] = parts
    else:
        message["content"] = None
    for key in ("name", "tool_call_id"):
        value = flat.get(f"message.{key}")
        if isinstance(value, str) and value:
            message[key] = value
    calls = _flat_tool_calls(
        flat,
        "message.tool_calls.",
        id="tool_call.id",
        name="tool_call.function.name",
        arguments="tool_call.function.arguments",
    )
    if calls:
        message["tool_calls"] = calls
    known = ("message.contents.", "message.tool_calls.")
    other = {key: value for key, value in flat.items() if key not in _OPENINFERENCE_KEYS and not key.startswith(known)}
    if other:
        message["openinference"] = other
    return message


# --- form 3: OpenLLMetry ----------------------------------------------------------------------------------------


def _read_openllmetry(span: Span) -> _Read:
    attributes = span.attributes
    read = _Read()
    _common_genai(attributes, read)
    for prefix, target in (("gen_ai.prompt.", read.input), ("gen_ai.completion.", read.output)):
        for flat in _indexed(attributes, prefix):
            message = _openllmetry_message(flat, read, prefix)
            if message is not None:
                target.append(message)
    if not read.finish_reasons:
        read.finish_reasons = [
            message["finish_reason"] for message in read.output if isinstance(message.get("finish_reason"), str)
        ]
    for function in _indexed(attributes, "llm.request.functions."):
        tool: dict[str, Any] = {"type": "function", "function": {"name": _str(function.get("name"))}}
        if isinstance(function.get("description"), str):
            tool["function"]["description"] = function["description"]
        if function.get("parameters") is not None:
            tool["function"]["parameters"] = _json_attribute(function["parameters"])
        read.tools.append(tool)
    return read


_OPENLLMETRY_KEYS = frozenset({"role", "content", "name", "tool_call_id"})


def _openllmetry_message(flat: dict[str, Any], read: _Read, where: str) -> dict[str, Any] | None:
    role = flat.get("role")
    if not isinstance(role, str) or not role:
        read.warnings.append(f"{where}: a message without role; left out")
        return None
    content = flat.get("content")
    if isinstance(content, str) and content.startswith("[") and content.endswith("]"):
        parsed = parsed_if_storable(content)  # multimodal content is written as the JSON of its parts
        if isinstance(parsed, list) and all(isinstance(part, dict) and "type" in part for part in parsed):
            content = parsed
    message: dict[str, Any] = {"role": role, "content": content if isinstance(content, str | list) else None}
    for key in ("name", "tool_call_id"):
        value = flat.get(key)
        if isinstance(value, str) and value:
            message[key] = value
    calls = _flat_tool_calls(flat, "tool_calls.", id="id", name="name", arguments="arguments")
    if calls:
        message["tool_calls"] = calls
    other = {
        key: value for key, value in flat.items() if key not in _OPENLLMETRY_KEYS and not key.startswith("tool_calls.")
    }
    message.update({key: value for key, value in other.items() if key not in message})
    return message


_READERS = {"genai": _read_genai, "openinference": _read_openinference, "openllmetry": _read_openllmetry}
