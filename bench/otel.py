"""O1: OpenTelemetry spans into stored messages, against the bulk JSON endpoint on the same conversations.

    python bench/otel.py [--database-url postgres://postgres@127.0.0.1:5432/postgres] [--chats 200] [--turns 4]
                         [--per-request 200]

It creates a database of its own on the server of --database-url (migrated to this code), serves it with gunicorn
on 127.0.0.1 and drops it at the end; nothing leaves 127.0.0.1. A workload of id-less chats, each a growing
history of model calls (a user turn, a tool call, its result, an answer, as the GenAI conventions write them), is
sent turn by turn: every chat's first call, then every chat's second, ... (as instrumented applications export
them), --per-request calls to a request,

  OTLP   as protobuf ExportTraceServiceRequests to POST /api/v1/otel/v1/traces (one source), and
  bulk   as the very chat documents the OTLP parser makes of those spans, JSON arrays to POST /api/v1/ingest/bulk/
         (another source),

one after the other in the same run, and prints the stored messages per second of each and their ratio (goal:
OTLP >= 0.5x bulk). Both end with one conversation per chat.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import DEFAULT_BASE_URL, Database, Server  # noqa: E402

DB_NAME = "masterbrain_otel_bench"
START_NS = 1_733_000_000_000_000_000


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _span(chat: int, turn: int, inputs: list[Any], outputs: list[Any]) -> dict[str, Any]:
    start = START_NS + (chat * 100 + turn) * 1_000_000_000
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.temperature": 0.3,
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 100 * (turn + 1),
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    return {
        "traceId": f"{chat:016x}{turn:016x}",
        "spanId": f"{chat * 100 + turn + 1:016x}",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 400_000_000),
        "attributes": [{"key": key, "value": _value(value)} for key, value in attributes.items()],
    }


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def workload(chats: int, turns: int, *, first: int = 0) -> list[list[dict[str, Any]]]:
    """Spans by round: round t holds call t of every chat (the whole history so far as its input)."""
    rounds: list[list[dict[str, Any]]] = [[] for _ in range(turns * 2)]
    for chat in range(first, first + chats):
        history = [_text("system", "You are a lab assistant."), _text("user", f"Chat {chat}: plan an assay.")]
        for turn in range(turns):
            call_id = f"call_{chat}_{turn}"
            call = {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": call_id, "name": "search", "arguments": {"q": f"{chat}-{turn}"}}],
                "finish_reason": "tool_calls",
            }
            rounds[2 * turn].append(_span(chat, 2 * turn, list(history), [call]))
            result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": "x" * 800}]}
            history += [call, result]
            answer = {**_text("assistant", f"Step {turn} of chat {chat}: " + "y" * 300), "finish_reason": "stop"}
            rounds[2 * turn + 1].append(_span(chat, 2 * turn + 1, list(history), [answer]))
            history += [answer, _text("user", f"And then, after step {turn}?")]
    return rounds


def _request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}


def protobuf_body(spans: list[dict[str, Any]]) -> bytes:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    copy = json.loads(json.dumps(_request(spans)))
    for span in copy["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId"):
            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    message = ExportTraceServiceRequest()
    json_format.ParseDict(copy, message)
    data: bytes = message.SerializeToString()
    return data


def bulk_body(spans: list[dict[str, Any]]) -> bytes:
    """The chat documents the OTLP endpoint makes of these spans, as one bulk JSON array."""
    from chats.ingest import otel

    decoded = otel.read_spans(otel.spans_from_json(_request(spans)))
    return json.dumps([document.document for document in decoded.documents]).encode()


def post(port: int, key: str, path: str, body: bytes, content_type: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Authorization": f"Api-Key {key}", "Content-Type": content_type})
    response = conn.getresponse()
    answer = response.read()
    elapsed = time.perf_counter() - started
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"{path}: {response.status} {answer[:500]!r}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL))
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--per-request", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "masterbrain_site.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()

    database = Database(args.database_url, DB_NAME)
    server = None
    try:
        keys = {name: database.create_source(name) for name in ("otlp", "bulk")}
        rounds = workload(args.chats, args.turns)
        batches = [spans[i : i + args.per_request] for spans in rounds for i in range(0, len(spans), args.per_request)]
        otlp_bodies = [protobuf_body(batch) for batch in batches]
        bulk_bodies = [bulk_body(batch) for batch in batches]
        server = Server(database.env, 2)
        # Warm both paths on a chat of their own, in each source.
        warm = workload(1, 1, first=10**6)
        post(server.port, keys["otlp"], "/api/v1/otel/v1/traces", protobuf_body(warm[0]), "application/x-protobuf")
        post(server.port, keys["bulk"], "/api/v1/ingest/bulk/", bulk_body(warm[0]), "application/json")
        elapsed = {"otlp": 0.0, "bulk": 0.0}
        for otlp_body, json_body in zip(otlp_bodies, bulk_bodies, strict=True):
            elapsed["bulk"] += post(server.port, keys["bulk"], "/api/v1/ingest/bulk/", json_body, "application/json")
            elapsed["otlp"] += post(
                server.port, keys["otlp"], "/api/v1/otel/v1/traces", otlp_body, "application/x-protobuf"
            )
        rates = {}
        with database.connect() as conn:
            for name in keys:
                conversations, messages = conn.execute(
                    "SELECT count(DISTINCT c.id), count(m.id) FROM chats_conversation c JOIN chats_source s "
                    "ON s.id = c.source_id JOIN chats_message m ON m.conversation_id = c.id WHERE s.name = %s",
                    [name],
                ).fetchone() or (0, 0)
                rates[name] = messages / elapsed[name]
                print(
                    f"O1 {name:5} {messages:,} messages, {conversations:,} conversations "
                    f"(for {args.chats} chats and 1 warm-up chat) in {elapsed[name]:.1f} s: {rates[name]:,.0f} msgs/s"
                )
        ratio = rates["otlp"] / rates["bulk"]
        spans = sum(len(spans) for spans in rounds)
        print(
            f"O1 OTLP / bulk JSON, stored messages per second: {ratio:.2f}x "
            f"({spans:,} spans, {spans / elapsed['otlp']:,.0f} spans/s; goal >= 0.5x) {'ok' if ratio >= 0.5 else 'MISSED'}"
        )
    finally:
        if server is not None:
            server.stop()
        database.drop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
