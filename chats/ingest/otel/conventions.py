"""Which convention a span follows, and its reader for each: the GenAI semantic conventions, OpenInference and
OpenLLMetry (provider, models, token usage, settings, tools and messages), and the results of ``execute_tool`` spans."""

from __future__ import annotations

from typing import Any

from chats.ingest.otel.messages import genai_message, genai_parts, openinference_message, openllmetry_message
from chats.ingest.otel.spans import CALL_OPERATIONS, TOOL_OPERATION, Span, SpanRead
from chats.ingest.otel.values import as_count, as_text, indexed, json_attribute, json_text, unstorable_json

# gen_ai.request.* attributes that are not settings of the call.
_NOT_SETTINGS = frozenset({"gen_ai.request.model"})


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


def tool_span_results(spans: list[Span]) -> dict[str, dict[str, dict[str, Any]]]:
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
        message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": json_text(result)}
        name = attributes.get("gen_ai.tool.name")
        if isinstance(name, str) and name:
            message["name"] = name
        message["otel"] = {"trace_id": span.trace_id, "span_id": span.span_id}
        results.setdefault(span.trace_id, {})[call_id] = message
    return results


# --- form 1: the GenAI semantic conventions ---------------------------------------------------------------------


def _read_genai(span: Span) -> SpanRead:
    attributes = span.attributes
    read = SpanRead()
    _common_genai(attributes, read)
    system = json_attribute(attributes.get("gen_ai.system_instructions"))
    inputs = json_attribute(attributes.get("gen_ai.input.messages"))
    outputs = json_attribute(attributes.get("gen_ai.output.messages"))
    if system is not None:
        parts = system if isinstance(system, list) else [system]
        content = genai_parts(parts, {}, read, "gen_ai.system_instructions")
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
            why = unstorable_json(value) if isinstance(value, str) else ""
            read.warnings.append(f"{key} is not a JSON list of messages{why}; kept in the model object")
            read.settings[key] = value
            continue
        for index, message in enumerate(value):
            target.extend(genai_message(message, read, f"{key}/{index}"))
    tools = json_attribute(attributes.get("gen_ai.tool.definitions"))
    if isinstance(tools, list):
        read.tools = tools
    elif tools is not None:
        read.settings["gen_ai.tool.definitions"] = tools
    return read


def _common_genai(attributes: dict[str, Any], read: SpanRead) -> None:
    """Attributes the GenAI conventions and OpenLLMetry share."""
    read.provider = as_text(attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system"))
    read.request_model = as_text(attributes.get("gen_ai.request.model"))
    read.response_model = as_text(attributes.get("gen_ai.response.model"))
    read.response_id = as_text(attributes.get("gen_ai.response.id"))
    read.input_tokens = as_count(
        attributes.get("gen_ai.usage.input_tokens", attributes.get("gen_ai.usage.prompt_tokens"))
    )
    read.output_tokens = as_count(
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


# --- form 2: OpenInference --------------------------------------------------------------------------------------


def _read_openinference(span: Span) -> SpanRead:
    attributes = span.attributes
    read = SpanRead()
    read.provider = as_text(attributes.get("llm.provider") or attributes.get("llm.system"))
    # llm.model_name is the model that answered; the one asked for is in the invocation parameters.
    read.request_model = read.response_model = as_text(attributes.get("llm.model_name"))
    read.input_tokens = as_count(attributes.get("llm.token_count.prompt"))
    read.output_tokens = as_count(attributes.get("llm.token_count.completion"))
    parameters = json_attribute(attributes.get("llm.invocation_parameters"))
    if isinstance(parameters, dict):
        read.settings = {key: value for key, value in parameters.items() if key not in ("model", "messages", "tools")}
        if isinstance(parameters.get("model"), str) and parameters["model"]:
            read.request_model = parameters["model"]
    elif parameters is not None:
        read.settings["llm.invocation_parameters"] = parameters
    reason = attributes.get("llm.finish_reason")
    if isinstance(reason, str):
        read.finish_reasons = [reason]
    output_value = json_attribute(attributes.get("output.value"))
    if isinstance(output_value, dict):
        read.response_id = as_text(output_value.get("id"))
        read.response_model = as_text(output_value.get("model")) or read.response_model
        choices = output_value.get("choices")
        if not read.finish_reasons and isinstance(choices, list):
            read.finish_reasons = [
                choice["finish_reason"]
                for choice in choices
                if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
            ]
    for prefix, target in (("llm.input_messages.", read.input), ("llm.output_messages.", read.output)):
        for flat in indexed(attributes, prefix):
            message = openinference_message(flat, read, prefix)
            if message is not None:
                target.append(message)
    for tool in indexed(attributes, "llm.tools."):
        schema = tool.get("tool.json_schema")
        read.tools.append(json_attribute(schema) if schema is not None else tool)
    return read


# --- form 3: OpenLLMetry ----------------------------------------------------------------------------------------


def _read_openllmetry(span: Span) -> SpanRead:
    attributes = span.attributes
    read = SpanRead()
    _common_genai(attributes, read)
    for prefix, target in (("gen_ai.prompt.", read.input), ("gen_ai.completion.", read.output)):
        for flat in indexed(attributes, prefix):
            message = openllmetry_message(flat, read, prefix)
            if message is not None:
                target.append(message)
    if not read.finish_reasons:
        read.finish_reasons = [
            message["finish_reason"] for message in read.output if isinstance(message.get("finish_reason"), str)
        ]
    for function in indexed(attributes, "llm.request.functions."):
        tool: dict[str, Any] = {"type": "function", "function": {"name": as_text(function.get("name"))}}
        if isinstance(function.get("description"), str):
            tool["function"]["description"] = function["description"]
        if function.get("parameters") is not None:
            tool["function"]["parameters"] = json_attribute(function["parameters"])
        read.tools.append(tool)
    return read


READERS = {"genai": _read_genai, "openinference": _read_openinference, "openllmetry": _read_openllmetry}
