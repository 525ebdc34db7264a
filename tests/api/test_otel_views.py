"""POST /api/v1/otel/v1/traces over the real HTTP stack: OTLP/JSON and protobuf, gzip, the OTLP answer, identity."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from rest_framework.test import APIClient

from chats.models import Conversation, IngestionReceipt, Message, ModelCall, ToolCall
from tests.factories import otlp

URL = "/api/v1/otel/v1/traces"

pytestmark = pytest.mark.django_db


def post(client: APIClient, body: dict[str, Any], **headers: Any) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json", **headers)


def post_protobuf(client: APIClient, data: bytes, **headers: Any) -> Any:
    return client.post(URL, data=data, content_type="application/x-protobuf", **headers)


def test_the_calls_of_one_chat_become_one_conversation_with_the_tool_call_linked(ingest_client):
    response = post(ingest_client, otlp.request(*otlp.weather_chat()))

    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["outcome"] for r in body["results"]] == ["created", "updated"]
    assert "partialSuccess" not in body
    conversation = Conversation.objects.get()
    assert conversation.input_format == "chat_document" and conversation.external_id_generated
    roles = list(conversation.messages.order_by("depth").values_list("role", "text"))
    assert roles == [
        ("system", "You answer about the weather."),
        ("user", "What is the weather in Paris?"),
        ("assistant", ""),
        ("tool", "rainy, 12 C"),
        ("assistant", "It is rainy in Paris."),
    ]
    call = ToolCall.objects.get()
    assert call.result_message is not None and call.result_message.text == "rainy, 12 C"
    assert call.call_id == "call_1" and call.name == "get_weather"
    assert conversation.model_name == "gpt-4o" and conversation.model_config is not None
    assert conversation.model_config["temperature"] == 0.2 and conversation.model_config["provider"] == "openai"
    assert conversation.metadata["tools"] == otlp.TOOLS


def test_each_call_keeps_its_span_ids_latency_usage_and_finish_reason(ingest_client):
    post(ingest_client, otlp.request(*otlp.weather_chat()))

    calls = list(ModelCall.objects.order_by("started_at"))
    assert [(c.trace_id[-3:], c.span_id[-2:]) for c in calls] == [("001", "0b"), ("065", "0c")]
    first, second = calls
    assert first.latency_ms == 250 and first.input_tokens == 150 and first.output_tokens == 7
    assert first.finish_reasons == ["tool_calls"] and second.finish_reasons == ["stop"]
    assert first.provider == "openai" and first.request_model == "gpt-4o"
    assert first.response_model == "gpt-4o-2024-08-06" and first.settings == {"temperature": 0.2, "max_tokens": 200}
    # Linked to the call's output message, which keeps the span as its provenance.
    assert first.message is not None and second.message is not None
    assert first.message.role == "assistant" and first.message.tool_calls.get().call_id == "call_1"
    assert second.message.text == "It is rainy in Paris."
    assert second.message.extra["otel"]["span_id"] == second.span_id


def test_a_resend_changes_nothing(ingest_client):
    body = otlp.request(*otlp.weather_chat())
    post(ingest_client, body)
    counts = (Message.objects.count(), ModelCall.objects.count(), Conversation.objects.count())

    response = post(ingest_client, body)

    assert [r["outcome"] for r in response.json()["results"]] == ["unchanged", "unchanged"]
    assert (Message.objects.count(), ModelCall.objects.count(), Conversation.objects.count()) == counts


def test_calls_sent_one_request_each_grow_one_conversation(ingest_client):
    first, second = otlp.weather_chat()
    assert post(ingest_client, otlp.request(first)).json()["results"][0]["outcome"] == "created"
    assert post(ingest_client, otlp.request(second)).json()["results"][0]["outcome"] == "updated"
    assert Conversation.objects.count() == 1 and Message.objects.count() == 5


def test_a_conversation_id_attribute_names_the_conversation(ingest_client):
    post(ingest_client, otlp.request(*otlp.weather_chat(**{"gen_ai.conversation.id": "chat-42"})))
    post(ingest_client, otlp.request(*otlp.weather_chat(2, **{"session.id": "chat-43"})))

    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["chat-42", "chat-43"]


def test_a_configured_attribute_names_the_conversation(ingest_client):
    spans = otlp.weather_chat(**{"app.chat": "mine-1", "gen_ai.conversation.id": "ignored"})

    post(ingest_client, otlp.request(*spans), HTTP_X_MASTERBRAIN_CONVERSATION_ATTRIBUTE="app.chat")

    assert Conversation.objects.get().external_id == "mine-1"


def test_protobuf_and_gzip_answer_an_export_trace_service_response(ingest_client):
    data = gzip.compress(otlp.to_protobuf(otlp.request(*otlp.weather_chat())))

    response = post_protobuf(ingest_client, data, HTTP_CONTENT_ENCODING="gzip")

    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")
    assert Conversation.objects.count() == 1 and ModelCall.objects.count() == 2


def test_spans_that_are_not_genai_are_skipped_and_counted(ingest_client):
    http = otlp.span(5, 5, {"http.request.method": "GET"}, name="GET /")

    response = post_protobuf(ingest_client, otlp.to_protobuf(otlp.request(http, *otlp.weather_chat())))

    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 0
    assert "1 spans are not GenAI model calls" in answer.partial_success.error_message
    assert Message.objects.count() == 5


def test_a_call_without_content_is_a_rejected_span_with_its_reason(ingest_client):
    bare = otlp.span(7, 7, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})

    body = post(ingest_client, otlp.request(bare, *otlp.weather_chat())).json()

    assert body["partialSuccess"]["rejectedSpans"] == "1"
    assert "content capture" in body["partialSuccess"]["errorMessage"]
    assert Conversation.objects.count() == 1


def test_execute_tool_spans_fill_in_results_no_later_call_repeats(ingest_client):
    call = otlp.genai_call(9, 1, [otlp.QUESTION], [otlp.CALL])
    tool = otlp.span(
        9,
        2,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.result": "sunny",
        },
        name="execute_tool get_weather",
    )

    post(ingest_client, otlp.request(call, tool))

    result = ToolCall.objects.get().result_message
    assert result is not None and result.role == "tool" and result.text == "sunny"


def test_a_body_that_is_not_otlp_is_a_400_status_with_a_receipt(ingest_client):
    response = post_protobuf(ingest_client, b"\xff\xff\xff\xff not protobuf")

    assert response.status_code == 400 and response["Content-Type"] == "application/x-protobuf"
    assert b"not an OTLP ExportTraceServiceRequest" in response.content
    assert IngestionReceipt.objects.get().outcome == "rejected"

    response = ingest_client.post(URL, data=b'{"resourceSpans": 3}', content_type="application/json")
    assert response.status_code == 400 and response.json()["errors"][0]["message"] == "/resourceSpans must be a list"


def test_other_media_types_and_encodings_are_refused(ingest_client):
    assert ingest_client.post(URL, data="x", content_type="text/plain").status_code == 415
    data = json.dumps(otlp.request()).encode()
    response = ingest_client.post(URL, data=data, content_type="application/json", HTTP_CONTENT_ENCODING="br")
    assert response.status_code == 415


def test_a_gzip_bomb_is_a_413(ingest_client, settings):
    settings.MASTERBRAIN_MAX_BODY_BYTES = 4096
    data = gzip.compress(b" " * 100_000)

    response = ingest_client.post(URL, data=data, content_type="application/json", HTTP_CONTENT_ENCODING="gzip")

    assert response.status_code == 413


def test_more_model_calls_than_a_bulk_request_takes_is_a_413(ingest_client, settings):
    settings.MASTERBRAIN_MAX_BULK_ITEMS = 1

    response = post(ingest_client, otlp.request(*otlp.weather_chat()))

    assert response.status_code == 413 and "at most 1 per request" in response.json()["message"]
    assert Conversation.objects.count() == 0


def test_without_a_source_key_it_is_a_401(api_client):
    assert post(api_client, otlp.request(*otlp.weather_chat())).status_code == 401
