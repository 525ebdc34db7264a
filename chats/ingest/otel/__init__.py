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

The package's modules: ``spans`` (the values passed along), ``decoding`` (request bodies to spans), ``conventions``
(which form a span is in, and its reader), ``messages`` (each form's messages and tool calls), ``values`` (attribute
values as the readers take them) and ``documents`` (the spans' documents).
"""

from chats.ingest.otel.conventions import span_form
from chats.ingest.otel.decoding import spans_from_json, spans_from_protobuf
from chats.ingest.otel.documents import read_spans
from chats.ingest.otel.spans import (
    CALL_OPERATIONS,
    ID_ATTRIBUTES,
    TOOL_OPERATION,
    Decoded,
    ModelCall,
    OtlpError,
    Rejected,
    Span,
    SpanDocument,
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
