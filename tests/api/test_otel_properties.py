"""Hostile input on POST /api/v1/otel/v1/traces: whatever arrives (bytes that are not protobuf, OTLP/JSON with
attributes of the wrong type, JSON in attributes holding NUL or lone surrogates, 10,000 spans), the answer is a
clear 4xx or an OTLP partial success, never a 5xx, and what is refused stores nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from chats.models import Conversation, IngestionReceipt, Message, ModelCall
from tests.factories import otlp

URL = "/api/v1/otel/v1/traces"
HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

pytestmark = pytest.mark.django_db

hostile_text = st.text(max_size=30) | st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "{", "[1,", "null"])
# JSON texts that attributes hold: valid, broken, deep, or with NUL and lone surrogates inside.
json_text = st.one_of(
    hostile_text,
    st.recursive(
        st.none() | st.booleans() | st.integers() | hostile_text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
        max_leaves=10,
    ).map(lambda value: json.dumps(value, ensure_ascii=True)),
    st.just('{"role": "user", "parts": [{"type": "text", "content": "\\u0000"}]}'),
    st.just('[{"role": "user", "parts": [{"type": "text", "content": "\\ud800"}]}]'),
    st.just("[" * 200 + "]" * 200),
)
# AnyValue objects, well formed or not: the wrong type under a key, unknown keys, an array of anything.
any_value = st.one_of(
    st.builds(lambda t: {"stringValue": t}, json_text),
    st.builds(lambda v: {"intValue": v}, st.integers() | st.text(max_size=5) | st.just(2**70)),
    st.builds(lambda v: {"doubleValue": v}, st.floats() | st.sampled_from(["NaN", "Infinity", "x"])),
    st.builds(lambda v: {"boolValue": v}, st.booleans() | st.integers()),
    st.builds(lambda v: {"bytesValue": v}, st.sampled_from(["AAAA", "not base64!", 5])),
    st.builds(
        lambda v: {"arrayValue": {"values": v}},
        st.lists(st.builds(lambda t: {"stringValue": t}, hostile_text), max_size=3),
    ),
    st.builds(lambda v: {"arrayValue": v}, st.integers() | st.text(max_size=3)),
    st.builds(lambda v: {"kvlistValue": {"values": [{"key": "k", "value": v}]}}, st.just({"stringValue": "v"})),
    st.builds(lambda v: {"stringValue": v}, st.integers() | st.none() | st.lists(st.integers(), max_size=2)),
    st.just({}),
    st.just("not an object"),
)
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.conversation.id",
    "gen_ai.request.temperature",
    "gen_ai.usage.input_tokens",
    "gen_ai.response.finish_reasons",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.invocation_parameters",
    "session.id",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.content",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.result",
]
attribute = st.builds(lambda key, value: {"key": key, "value": value}, st.sampled_from(KEYS) | hostile_text, any_value)
hostile_span = st.fixed_dictionaries(
    {"attributes": st.lists(attribute, max_size=8)},
    optional={
        "traceId": st.sampled_from(["0" * 32, "zz", "", 5]),
        "spanId": st.sampled_from(["1" * 16, "x" * 40, None]),
        "name": hostile_text | st.integers(),
        "startTimeUnixNano": st.sampled_from(["1", "-5", "99999999999999999999", "x", 1.5, 2**64]),
        "endTimeUnixNano": st.sampled_from(["2", "0", "18446744073709551615"]),
    },
)


def _body(spans: list[Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


@HYPOTHESIS
@given(spans=st.lists(hostile_span, max_size=4), good=st.booleans())
def test_no_otlp_json_makes_the_endpoint_fail(ingest_client, spans, good):
    if good:
        spans = [*spans, *otlp.weather_chat()]
    data = json.dumps(_body(spans)).encode()

    response = ingest_client.post(URL, data=data, content_type="application/json")

    assert response.status_code in (200, 400), response.content
    body = response.json()
    if response.status_code == 200:
        outcomes = [result["outcome"] for result in body["results"]]
        rejected = int(body.get("partialSuccess", {}).get("rejectedSpans", "0"))
        assert rejected >= outcomes.count("rejected")
        if good:
            assert Conversation.objects.exists()


@HYPOTHESIS
@given(data=st.binary(max_size=200))
def test_no_bytes_make_the_protobuf_endpoint_fail(ingest_client, data):
    response = ingest_client.post(URL, data=data, content_type="application/x-protobuf")

    assert response.status_code in (200, 400), response.content
    if response.status_code == 200:
        ExportTraceServiceResponse.FromString(response.content)


@pytest.mark.parametrize(
    "inputs",
    [
        '[{"role": "user", "parts": [{"type": "text", "content": "a\\u0000b"}]}]',
        '[{"role": "user", "parts": [{"type": "text", "content": "a\\ud800b"}]}]',
    ],
    ids=["NUL", "lone surrogate"],
)
def test_json_in_an_attribute_that_cannot_be_stored_rejects_that_span_only(ingest_client, inputs):
    bad = otlp.span(3, 3, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs})
    data = json.dumps(_body([bad, *otlp.weather_chat()]))

    response = ingest_client.post(URL, data=data, content_type="application/json")

    assert response.status_code == 200
    body = response.json()
    assert body["partialSuccess"]["rejectedSpans"] == "1"
    assert "/resourceSpans/0/scopeSpans/0/spans/0" in body["partialSuccess"]["errorMessage"]
    assert "its JSON cannot be stored" in body["partialSuccess"]["errorMessage"]
    assert [r["outcome"] for r in body["results"]] == ["created", "updated"]
    assert Conversation.objects.count() == 1 and ModelCall.objects.count() == 2


def test_a_protobuf_string_that_is_not_utf8_is_a_400(ingest_client):
    data = otlp.to_protobuf(_body([otlp.span(1, 1, {"gen_ai.operation.name": "chat"})]))
    assert b"chat" in data
    broken = data.replace(b"chat", b"\xff\xfeat", 1)

    response = ingest_client.post(URL, data=broken, content_type="application/x-protobuf")

    assert response.status_code == 400
    assert not Conversation.objects.exists() and IngestionReceipt.objects.get().outcome == "rejected"


def test_ten_thousand_spans_that_are_not_model_calls_are_skipped(ingest_client):
    spans = [otlp.span(1, n + 1, {"http.route": "/"}, name="GET /") for n in range(10_000)]

    response = ingest_client.post(URL, data=otlp.to_protobuf(_body(spans)), content_type="application/x-protobuf")

    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 0
    assert answer.partial_success.error_message.startswith("10000 spans are not GenAI model calls")
    assert not Message.objects.exists()


def test_ten_thousand_model_calls_in_one_request_are_a_413(ingest_client):
    spans = [otlp.genai_call(n, n + 1, [otlp.QUESTION], [otlp.ANSWER]) for n in range(10_000)]

    response = ingest_client.post(URL, data=json.dumps(_body(spans)), content_type="application/json")

    assert response.status_code == 413
    assert "10000 model-call spans: at most 1000 per request" in response.json()["message"]
    assert not Conversation.objects.exists()
