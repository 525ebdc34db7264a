"""chats.ingest.otel: OTLP spans (protobuf and the JSON mapping) read into chat documents, in the three forms
instrumentations send: the GenAI semantic conventions, OpenInference and OpenLLMetry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chats.ingest import otel, parse_document
from chats.ingest.identity import assign_content_keys
from tests.factories import otlp


def decoded(*spans: dict[str, Any], **options: Any) -> otel.Decoded:
    return otel.read_spans(otel.spans_from_json(otlp.request(*spans)), **options)


def parsed(document: otel.SpanDocument) -> Any:
    conversation = parse_document(document.document)
    assign_content_keys(conversation)
    return conversation


def test_a_genai_call_becomes_a_chat_document_of_its_input_and_output():
    first, second = decoded(*otlp.weather_chat()).documents

    assert first.document["model"] == {
        "name": "gpt-4o",
        "provider": "openai",
        "response_model": "gpt-4o-2024-08-06",
        "temperature": 0.2,
        "max_tokens": 200,
    }
    assert first.document["tools"] == otlp.TOOLS and "conversation_id" not in first.document
    messages = first.document["main_messages"]
    assert messages[:2] == [
        {"role": "system", "content": "You answer about the weather."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    call = messages[2]
    assert call["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]
    assert call["finish_reason"] == "tool_calls" and call["otel"]["span_id"] == f"{11:016x}"
    assert first.output_index == 2 and second.output_index == 4
    assert parse_document(first.document).format == "chat_document"


def test_the_next_call_repeats_the_history_with_the_same_content_keys():
    first, second = (parsed(d) for d in decoded(*otlp.weather_chat()).documents)

    assert [m.content_key for m in first.messages] == [m.content_key for m in second.messages[:3]]
    assert second.messages[3].role == "tool" and second.messages[3].tool_call_id == "call_1"


def test_the_call_is_kept_with_its_ids_times_usage_and_finish_reasons():
    call = decoded(*otlp.weather_chat()).documents[0].call

    assert (call.trace_id, call.span_id) == (f"{1:032x}", f"{11:016x}")
    assert call.latency_ms == 250 and call.started_at is not None and call.started_at.year == 2024
    assert (call.input_tokens, call.output_tokens, call.finish_reasons) == (150, 7, ["tool_calls"])
    assert call.settings == {"temperature": 0.2, "max_tokens": 200} and call.form == "genai"


def test_system_instructions_reasoning_and_media_parts():
    inputs = [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Look"},
                {"type": "uri", "modality": "image", "uri": "https://e.org/a.png"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "AAAA"},
                {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": "BBBB"},
                {"type": "future_part", "x": 1},
            ],
        }
    ]
    outputs = [
        {"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}, {"type": "text", "content": "A cat."}]}
    ]
    span = otlp.genai_call(1, 1, inputs, outputs)
    span["attributes"] += otlp.attributes(
        {"gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}])}
    )

    conversation = parsed(decoded(span).documents[0])

    system, user, answer = conversation.messages
    assert system.role == "system" and system.text == "Be brief."
    assert [part["type"] for part in user.parts] == ["text", "image", "image", "audio", "unknown"]
    assert user.parts[2]["url"] == "data:image/png;base64,AAAA" and user.parts[4]["raw"] == {
        "type": "future_part",
        "x": 1,
    }
    assert answer.reasoning == "hmm" and answer.text == "A cat."


def test_a_conversation_id_attribute_and_a_configured_one():
    spans = otlp.weather_chat(1, **{"gen_ai.conversation.id": "c-1", "app.chat": "mine"})

    assert decoded(*spans).documents[0].document["conversation_id"] == "c-1"
    assert decoded(*spans, id_attributes=("app.chat",)).documents[0].document["conversation_id"] == "mine"


def test_spans_that_are_not_genai_are_counted_and_tool_spans_fill_in_results():
    tool = otlp.span(
        1,
        9,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.result": "sunny"},
    )
    http = otlp.span(1, 8, {"http.route": "/"})
    first = otlp.genai_call(1, 1, [otlp.QUESTION], [otlp.CALL])

    result = decoded(first, tool, http)

    assert (result.skipped, result.tool_spans, result.span_count) == (1, 1, 3)
    assert result.documents[0].document["main_messages"][-1]["content"] == "sunny"
    # A later call of the trace that repeats the result: not filled in twice.
    later = otlp.genai_call(1, 2, [otlp.QUESTION, otlp.CALL, otlp.RESULT], [otlp.ANSWER])
    assert [m["role"] for m in decoded(first, tool, later).documents[0].document["main_messages"]] == [
        "user",
        "assistant",
    ]


OPENINFERENCE = {
    "openinference.span.kind": "LLM",
    "llm.system": "openai",
    "llm.model_name": "gpt-4o-mini-2024-07-18",
    "llm.invocation_parameters": json.dumps({"model": "gpt-4o-mini", "temperature": 0.3}),
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Weather?",
    "llm.input_messages.1.message.role": "assistant",
    "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
    "llm.input_messages.2.message.role": "tool",
    "llm.input_messages.2.message.tool_call_id": "c1",
    "llm.input_messages.2.message.content": "rainy",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "It rains.",
    "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_weather"}}),
    "llm.token_count.prompt": 30,
    "llm.token_count.completion": 4,
    "llm.finish_reason": "stop",
    "session.id": "s-1",
}


def test_openinference_flattened_attributes():
    document = decoded(otlp.span(1, 1, OPENINFERENCE, name="ChatCompletion")).documents[0]

    conversation = parsed(document)
    assert [m.role for m in conversation.messages] == ["user", "assistant", "tool", "assistant"]
    assert conversation.messages[1].tool_calls[0].parsed_arguments == {"city": "Paris"}
    assert conversation.messages[2].tool_call_id == "c1" and conversation.messages[3].text == "It rains."
    assert conversation.external_id == "s-1" and conversation.model_name == "gpt-4o-mini"
    assert document.document["model"]["temperature"] == 0.3
    assert document.document["tools"] == [{"type": "function", "function": {"name": "get_weather"}}]
    call = document.call
    assert (call.form, call.provider, call.response_model) == ("openinference", "openai", "gpt-4o-mini-2024-07-18")
    assert (call.input_tokens, call.output_tokens, call.finish_reasons) == (30, 4, ["stop"])


OPENLLMETRY = {
    "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.request.temperature": 0.5,
    "gen_ai.usage.prompt_tokens": 12,
    "gen_ai.usage.completion_tokens": 3,
    "gen_ai.prompt.0.role": "user",
    "gen_ai.prompt.0.content": "Weather?",
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.finish_reason": "tool_calls",
    "gen_ai.completion.0.tool_calls.0.id": "c1",
    "gen_ai.completion.0.tool_calls.0.name": "get_weather",
    "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
    "llm.request.functions.0.name": "get_weather",
    "llm.request.functions.0.description": "The weather",
    "llm.request.functions.0.parameters": json.dumps({"type": "object"}),
}


def test_openllmetry_indexed_attributes():
    document = decoded(otlp.span(1, 1, OPENLLMETRY, name="openai.chat")).documents[0]

    conversation = parsed(document)
    assert [m.role for m in conversation.messages] == ["user", "assistant"]
    assert conversation.messages[1].tool_calls[0].name == "get_weather"
    assert conversation.messages[1].extra["finish_reason"] == "tool_calls"
    assert document.document["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "The weather", "parameters": {"type": "object"}},
        }
    ]
    call = document.call
    assert (call.form, call.provider, call.input_tokens, call.output_tokens) == ("openllmetry", "openai", 12, 3)
    assert call.finish_reasons == ["tool_calls"] and call.settings == {"temperature": 0.5}


def test_protobuf_and_json_give_the_same_documents():
    body = otlp.request(*otlp.weather_chat())

    from_json = otel.read_spans(otel.spans_from_json(body))
    from_protobuf = otel.read_spans(otel.spans_from_protobuf(otlp.to_protobuf(body)))

    assert [d.document for d in from_protobuf.documents] == [d.document for d in from_json.documents]


@pytest.mark.parametrize(
    "body",
    [[], {"resourceSpans": 1}, {"resourceSpans": [1]}, {"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]}],
)
def test_json_that_is_not_otlp_is_an_error(body):
    with pytest.raises(otel.OtlpError):
        otel.spans_from_json(body)


def test_bytes_that_are_not_protobuf_are_an_error():
    with pytest.raises(otel.OtlpError):
        otel.spans_from_protobuf(b"\x0a\xff\xff\xff\xff\x0f")


def test_values_of_the_wrong_type_are_left_out_and_named():
    span = otlp.span(1, 1, {})
    span["attributes"] = [
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}},
        {"key": "gen_ai.request.temperature", "value": {"doubleValue": "NaN"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": str(2**64)}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps([otlp.QUESTION])}},
    ]

    document = decoded(span).documents[0]

    assert document.call.input_tokens is None and document.call.output_tokens is None
    assert document.call.settings == {"temperature": "nan"}
    assert any("gen_ai.usage.input_tokens" in warning for warning in document.warnings)


def test_a_call_without_captured_content_is_rejected_with_the_reason():
    result = decoded(otlp.span(1, 1, {"gen_ai.operation.name": "chat"}))

    assert result.documents == [] and "content capture" in result.rejected[0].message


def test_several_choices_continue_with_the_first_and_keep_the_others():
    second = {"role": "assistant", "parts": [{"type": "text", "content": "Or sunny."}], "finish_reason": "stop"}
    document = decoded(otlp.genai_call(1, 1, [otlp.QUESTION], [otlp.ANSWER, second])).documents[0]

    messages = document.document["main_messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] and document.output_index == 1
    assert messages[1]["content"] == "It is rainy in Paris."
    assert messages[1]["other_choices"][0]["content"] == "Or sunny."
