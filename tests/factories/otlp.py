"""OTLP trace bodies for tests, built from OTLP's JSON mapping (the Python SDK has no JSON exporter), and the same
bodies in protobuf."""

from __future__ import annotations

import base64
import json
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

START_NS = 1_733_000_000_000_000_000


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(v)} for k, v in value.items()]}}
    return {"stringValue": value}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in values.items()]


def span(
    trace: int, span_id: int, values: dict[str, Any], *, name: str = "chat gpt-4o", millis: int = 250, offset: int = 0
) -> dict[str, Any]:
    start = START_NS + offset * 1_000_000_000
    return {
        "traceId": f"{trace:032x}",
        "spanId": f"{span_id:016x}",
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + millis * 1_000_000),
        "attributes": attributes(values),
    }


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "weather-bot"})},
                "scopeSpans": [{"scope": {"name": "tests"}, "spans": list(spans)}],
            }
        ]
    }


def to_protobuf(body: dict[str, Any]) -> bytes:
    """The same request in protobuf (ids are hex in OTLP/JSON, base64 in protobuf's own JSON form)."""
    copy = json.loads(json.dumps(body))
    for resource in copy["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for item in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if item.get(key):
                        item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    message = ExportTraceServiceRequest()
    json_format.ParseDict(copy, message)
    data: bytes = message.SerializeToString()
    return data


# --- one chat in the GenAI conventions: a question, a tool call, its result, the answer ---------------------------

SYSTEM = {"role": "system", "parts": [{"type": "text", "content": "You answer about the weather."}]}
QUESTION = {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_calls",
}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "rainy, 12 C"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "It is rainy in Paris."}], "finish_reason": "stop"}
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def genai_call(
    trace: int, span_id: int, inputs: list[Any], outputs: list[Any], *, offset: int = 0, **extra: Any
) -> dict[str, Any]:
    values = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 200,
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.response.id": f"chatcmpl-{span_id}",
        "gen_ai.response.finish_reasons": [outputs[-1].get("finish_reason", "stop")] if outputs else [],
        "gen_ai.usage.input_tokens": 40 + 10 * span_id,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.tool.definitions": json.dumps(TOOLS),
        **extra,
    }
    return span(trace, span_id, values, offset=offset)


def weather_chat(trace: int = 1, /, **extra: Any) -> list[dict[str, Any]]:
    """The two model calls of one chat, each in its own trace (as openai-v2 sends them without a parent span)."""
    return [
        genai_call(trace, 10 * trace + 1, [SYSTEM, QUESTION], [CALL], **extra),
        genai_call(trace + 100, 10 * trace + 2, [SYSTEM, QUESTION, CALL, RESULT], [ANSWER], offset=1, **extra),
    ]
