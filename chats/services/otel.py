"""Ingestion of OpenTelemetry traces: the model calls' documents through the bulk writer, then the calls themselves.

Each model call's span is a chat document (``chats.ingest.otel``), stored by ``conversations_ingest_bulk`` exactly
as the bulk endpoint stores documents: the same preparation, placement (design notes §3: an explicit id names the
conversation, otherwise content keys place the call in the chat it continues), planner, receipts and audit events.
Then ``model_calls_record`` keeps each stored call's span (ids, times, usage, finish reasons, settings) beside its
conversation, linked to its output message; a resent span is the same call and is stored once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from chats import ingest, storable
from chats.ingest import identity
from chats.ingest import otel as otel_format
from chats.models import ApiKey, Message, ModelCall, Outcome, Source
from chats.services.audit import audited_write
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.ingestion import IngestResult

DOCUMENT_FORMAT = "chat_document"


@dataclass
class OtelResult:
    decoded: otel_format.Decoded
    results: list[IngestResult]  # one per document of `decoded`, in order

    @property
    def rejected(self) -> int:
        """Spans refused: GenAI spans that could not be read, and documents the ingestion refused."""
        return len(self.decoded.rejected) + sum(1 for r in self.results if r.outcome == Outcome.REJECTED)


def otel_traces_ingest(*, source: Source, decoded: otel_format.Decoded, api_key: ApiKey | None = None) -> OtelResult:
    """Store the model calls of decoded OTLP spans: each call's document, then the call (see the module)."""
    documents = decoded.documents
    results = conversations_ingest_bulk(
        source=source,
        documents=[d.document for d in documents],
        format=DOCUMENT_FORMAT,
        api_key=api_key,
        contents=[_content(d.document) for d in documents],
    )
    model_calls_record(calls=list(zip(documents, results, strict=True)))
    return OtelResult(decoded, results)


def _content(document: dict[str, Any]) -> bytes | None:
    """The bytes a span's document is kept as in its receipt: its JSON (None: the writer's canonical JSON, for a
    document orjson cannot write, one with a lone surrogate, which the writer then refuses)."""
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return None


@audited_write
def model_calls_record(*, calls: Sequence[tuple[otel_format.SpanDocument, IngestResult]]) -> int:
    """Keep the span of each call whose document was stored, linked to its output message; a call already kept (a
    resend) is left as it is. Derived from the ingestion, whose events record the conversations' changes: no event
    of its own. Returns how many calls were new."""
    stored = [(document, result) for document, result in calls if result.conversation is not None]
    if not stored:
        return 0
    output_keys = {}
    for document, result in stored:
        if document.output_index < 0:
            continue
        # The content key the output message was stored with: the document parsed as the ingestion parsed it.
        parsed = ingest.parse_document(document.document, format=DOCUMENT_FORMAT)
        identity.assign_content_keys(parsed)
        assert result.conversation is not None
        output_keys[document.path] = (result.conversation.pk, parsed.messages[document.output_index].content_key)
    message_ids = {
        (conversation_id, key): pk
        for pk, conversation_id, key in Message.objects.filter(
            conversation_id__in={conversation_id for conversation_id, _ in output_keys.values()},
            content_key__in={key for _, key in output_keys.values()},
        ).values_list("pk", "conversation_id", "content_key")
    }
    rows = []
    for document, result in stored:
        call = document.call
        assert result.conversation is not None
        texts = [call.trace_id, call.span_id, call.parent_span_id, call.name, call.operation, call.provider]
        texts += [call.request_model, call.response_model, call.response_id]
        if storable.unstorable([texts, call.finish_reasons, call.settings]) is not None:
            # The span's attributes hold what PostgreSQL cannot store (a NUL, a lone surrogate): the conversation
            # is kept, as received, without this call's summary row.
            continue
        rows.append(
            ModelCall(
                conversation_id=result.conversation.pk,
                message_id=message_ids.get(output_keys[document.path]) if document.path in output_keys else None,
                form=call.form,
                trace_id=call.trace_id,
                span_id=call.span_id,
                parent_span_id=call.parent_span_id,
                name=call.name,
                operation=call.operation,
                provider=call.provider,
                request_model=call.request_model,
                response_model=call.response_model,
                response_id=call.response_id,
                started_at=call.started_at,
                ended_at=call.ended_at,
                latency_ms=call.latency_ms,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                finish_reasons=call.finish_reasons,
                settings=call.settings,
            )
        )
    created = ModelCall.objects.bulk_create(rows, ignore_conflicts=True)
    return len(created)
