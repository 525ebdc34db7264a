"""Real instrumentation into a live server: the official ``openai`` client talks to a small OpenAI-compatible fake
(a ThreadingHTTPServer on a free loopback port) that answers with text, then with a tool call, then with the answer
after the tool result. The client is instrumented by ``opentelemetry-instrumentation-openai-v2`` (content capture
on, latest conventions) or by ``openinference-instrumentation-openai``, and the spans go to the live server through
the real OTLP/HTTP exporter (protobuf), then again as OTLP/JSON built from the same spans through the JSON mapping.

traceloop-sdk (OpenLLMetry) is not installed here: see the README ("Send from an instrumented application"); its
attribute form is tested with the spans it documents in tests/ingest/test_otel.py.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest
from django.test import Client
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chats.models import Conversation, IngestionReceipt, Message, ModelCall, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = "You answer about the weather."
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
EXPECTED_THREAD = [
    ("system", SYSTEM),
    ("user", "Hi"),
    ("assistant", "Hello! Ask me about the weather."),
    ("user", "What is the weather in Paris?"),
    ("assistant", ""),
    ("tool", "rainy, 12 C"),
    ("assistant", "It is rainy in Paris."),
]


class _FakeOpenAI(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: text, a tool call when asked about the weather, the answer after a tool result."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        last = messages[-1]
        message: dict[str, Any]
        if last["role"] == "tool":
            message, reason = {"role": "assistant", "content": "It is rainy in Paris."}, "stop"
        elif "weather" in (last.get("content") or ""):
            call = {
                "id": "call_w1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
            message, reason = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, reason = {"role": "assistant", "content": "Hello! Ask me about the weather."}, "stop"
        answer = {
            "id": f"chatcmpl-{len(messages)}",
            "object": "chat.completion",
            "created": 1_733_000_000,
            "model": f"{body['model']}-2024-07-18",
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {
                "prompt_tokens": 10 * len(messages),
                "completion_tokens": 5,
                "total_tokens": 10 * len(messages) + 5,
            },
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_openai() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def chat(base_url: str) -> str:
    """One chat of three model calls, each sending the whole history so far, as an application does."""
    client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]

    def call() -> Any:
        return client.chat.completions.create(
            messages=messages, model="gpt-4o-mini", tools=TOOLS, temperature=0.3, max_tokens=200
        )

    first = call()
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    second = call().choices[0].message
    assert second.tool_calls
    messages += [
        second.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": second.tool_calls[0].id, "content": "rainy, 12 C"},
    ]
    answer = call().choices[0].message.content
    assert isinstance(answer, str)
    return answer


@dataclass
class Instrumented:
    provider: TracerProvider
    memory: InMemorySpanExporter  # a copy of every span, to send again
    exporter: OTLPSpanExporter

    def spans(self) -> list[ReadableSpan]:
        self.provider.force_flush()
        return list(self.memory.get_finished_spans())


def _provider(live_server: Any, ingest_key: str, *, batch: bool) -> Instrumented:
    exporter = OTLPSpanExporter(
        endpoint=f"{live_server.url}/api/v1/otel/v1/traces", headers={"Authorization": f"Api-Key {ingest_key}"}
    )
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return Instrumented(provider, memory, exporter)


@pytest.fixture
def openai_v2(live_server: Any, ingest_key: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Instrumented]:
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setattr(_semconv._OpenTelemetrySemanticConventionStability, "_initialized", False)
    # One request per span, as it ends: each call of the chat arrives on its own.
    instrumented = _provider(live_server, ingest_key, batch=False)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=instrumented.provider)
    yield instrumented
    instrumentor.uninstrument()
    instrumented.provider.shutdown()


@pytest.fixture
def openinference(live_server: Any, ingest_key: str) -> Iterator[Instrumented]:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    # One request for the whole chat (a batch flushed at the end): its calls arrive together.
    instrumented = _provider(live_server, ingest_key, batch=True)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=instrumented.provider)
    yield instrumented
    instrumentor.uninstrument()
    instrumented.provider.shutdown()


def otlp_json(spans: list[ReadableSpan]) -> bytes:
    """The spans as an OTLP/JSON body: the protobuf request through the JSON mapping (ids in hex, not base64)."""
    body = json_format.MessageToDict(encode_spans(spans))
    for resource in body["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(body).encode()


def post_json(live_server: Any, ingest_key: str, data: bytes) -> dict[str, Any]:
    response = httpx.post(
        f"{live_server.url}/api/v1/otel/v1/traces",
        content=data,
        headers={"Content-Type": "application/json", "Authorization": f"Api-Key {ingest_key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def stored_state() -> tuple[Any, ...]:
    return (
        list(Message.objects.order_by("id").values_list("id", "key", "on_active_path")),
        list(ModelCall.objects.order_by("id").values_list("id", "span_id", "message_id")),
        list(ToolCall.objects.values_list("call_id", "result_message_id")),
        Conversation.objects.count(),
    )


def check_the_chat(reviewer: Any, *, model: str, tools: bool) -> Conversation:
    conversation = Conversation.objects.get()  # one conversation for the chat, not one per call
    thread = list(conversation.messages.filter(on_active_path=True).order_by("depth").values_list("role", "text"))
    assert thread == EXPECTED_THREAD
    assert conversation.message_count == len(EXPECTED_THREAD) and conversation.branch_count <= 1
    call = ToolCall.objects.get(conversation=conversation)
    assert call.call_id == "call_w1" and call.name == "get_weather" and call.parsed_arguments == {"city": "Paris"}
    assert call.result_message is not None and call.result_message.text == "rainy, 12 C"
    calls = list(ModelCall.objects.filter(conversation=conversation).order_by("started_at"))
    assert [c.input_tokens for c in calls] == [20, 40, 60] and {c.output_tokens for c in calls} == {5}
    assert [c.finish_reasons for c in calls] == [["stop"], ["tool_calls"], ["stop"]]
    assert all(c.latency_ms is not None and c.trace_id and c.span_id and c.message_id for c in calls)
    assert [c.message.text for c in calls if c.message] == [EXPECTED_THREAD[2][1], "", EXPECTED_THREAD[6][1]]
    assert conversation.model_config is not None and conversation.model_config["temperature"] == 0.3
    assert conversation.model_name == model

    page = Client()
    page.force_login(reviewer)
    html = page.get(f"/conversations/{conversation.uuid}/").content.decode()
    assert model in html and "temperature" in html and "0.3" in html
    assert html.count('class="model-call') == 3 and calls[1].span_id in html
    if tools:
        assert "The weather in a city" in html
    return conversation


def test_openai_v2_spans_become_one_conversation_and_a_resend_changes_nothing(
    fake_openai, openai_v2, live_server, ingest_key, reviewer
):
    assert chat(fake_openai) == "It is rainy in Paris."
    spans = openai_v2.spans()
    assert len(spans) == 3
    assert spans[0].attributes is not None and "gen_ai.input.messages" in spans[0].attributes

    check_the_chat(reviewer, model="gpt-4o-mini", tools=False)
    outcomes = list(IngestionReceipt.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["created", "updated", "updated"]  # each call appended to the one before
    before = stored_state()

    assert openai_v2.exporter.export(spans) == SpanExportResult.SUCCESS  # the same spans, protobuf, again
    answer = post_json(live_server, ingest_key, otlp_json(spans))  # and as OTLP/JSON

    assert [r["outcome"] for r in answer["results"]] == ["unchanged"] * 3
    assert "partialSuccess" not in answer
    assert stored_state() == before


def test_openinference_spans_become_one_conversation_and_a_resend_changes_nothing(
    fake_openai, openinference, live_server, ingest_key, reviewer
):
    assert chat(fake_openai) == "It is rainy in Paris."
    spans = openinference.spans()
    assert len(spans) == 3
    assert spans[0].attributes is not None and spans[0].attributes["openinference.span.kind"] == "LLM"

    conversation = check_the_chat(reviewer, model="gpt-4o-mini", tools=True)
    assert conversation.metadata["tools"] == TOOLS
    before = stored_state()

    assert openinference.exporter.export(spans) == SpanExportResult.SUCCESS
    answer = post_json(live_server, ingest_key, otlp_json(spans))

    assert [r["outcome"] for r in answer["results"]] == ["unchanged"] * 3
    assert stored_state() == before


def test_a_session_id_names_the_conversation(fake_openai, openinference, reviewer):
    from openinference.instrumentation import using_session

    with using_session("session-7"):
        chat(fake_openai)
    openinference.spans()

    assert Conversation.objects.get().external_id == "session-7"
    check_the_chat(reviewer, model="gpt-4o-mini", tools=True)
