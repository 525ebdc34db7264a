"""The values OTLP ingestion passes along: spans as decoded, what a form's reader found in one, and the documents
and rejections read from a request."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Operations whose spans are model calls (gen_ai.operation.name).
CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATION = "execute_tool"
# Attributes that name the conversation, by preference (design notes §3, rule 1).
ID_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")


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


@dataclass(slots=True)
class SpanRead:
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
