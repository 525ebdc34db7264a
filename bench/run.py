"""The benchmark: prints one table of figures and ratios against baselines measured in the same run.

    python bench/run.py [--scale smoke|default|N] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
                        [--skip p3,p5,...] [--only p4 [--skip audit --keep-database]]

It creates its own database (masterbrain_bench on the server of --database-url), migrates it, serves it with
gunicorn on 127.0.0.1 (as many workers as cores), and drops it at the end. Nothing leaves 127.0.0.1. With
`--only p4 --skip audit --keep-database` it keeps the database, and a later run with both reads the P4 rows it loaded (migrated
to the code's schema) rather than loading them again.

P1  bulk ingest over HTTP (NDJSON bodies from several client processes) against a raw psycopg COPY of the very
    rows it stored, into the same tables with the same indexes; the cost of each index ingest pays for; the
    latency of single-document ingest.
P2  the same bodies again (all unchanged), with a checksum of every table before and after.
P3  server time and SQL queries of the thread page and API at 10, 1,000 and 5,000 messages, the list page and
    the admin changelists; the 1,000-message thread page against serializing the same thread to JSON.
P4  list, deep keyset page, filtered list, full-text search, artifact-id lookup, the auditors' filters
    (workflow, has_warnings by kind, feedback_origin, model_setting, policy) and every other list filter, over
    >= 1,000,000 messages loaded by COPY (each message's search vector built by the trigger the COPY fires), with
    each query's plan; full-text search for a rare word, a common word and two words; the audit page (/audit/),
    first page, deep page and each filter, over as many audit events (P4 audit; --skip audit leaves it out).
    `--only p4` runs this part alone.
P5  the comparison workload (chat documents of about 20 OpenAI-style messages with 1-5 KB tool results, 500 a
    request) over HTTP with 1 and 4 clients, in the default configuration (no broker) and with a Celery worker,
    3 alternated runs each, against a raw COPY of the same messages into one plain table; after each run's last
    answer a search must find every conversation (search-ready = acknowledged). `--only p5` runs it alone.
P6  id-less conversations sent turn by turn over 5 turns (the growing history each time): one conversation each.
Growth  one conversation grown by 2 messages a turn to 5,000 messages: the index cost (the message vector
    trigger's time) per turn at turn 10 and at the last turn. `--only growth` runs it alone.
Memory: the peak RSS of a gunicorn worker serving one bulk request at the body-size limit.
L1  every parser on inputs built to make it slow, at about 10 KB and 1 MB (bench/parser_cost.py): the case whose
    cost per byte grows most.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import http.client
import io
import json
import multiprocessing
import os
import platform
import pstats
import re
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.server import Server, database_url, server_env  # noqa: E402

BENCH_DB = "masterbrain_bench"  # --database-name changes it
BENCH_LABEL = "bench-unused"  # P4: a label on no feedback


@dataclass(frozen=True)
class Scale:
    name: str
    conversations: int  # P1: new conversations over HTTP
    per_body: int  # documents per bulk request
    clients: int  # client processes
    singles: int  # single-document requests for latency
    thread_sizes: tuple[int, ...]  # P3
    scale_messages: int  # P4
    index_docs: int  # documents per index variant (in-process)
    repeats: int  # timed repetitions of each read
    memory_body: int  # bytes of the memory test's bulk body (0: the configured limit)
    compare_conversations: int = 2000  # P5: the comparison workload
    idless_conversations: int = 1000  # P6: id-less conversations sent turn by turn
    growth_messages: int = 5000  # growth: the messages one conversation is grown to, 2 a turn


SCALES = {
    "smoke": Scale("smoke", 16, 8, 2, 4, (10, 40, 80), 10_000, 8, 2, 1024 * 1024, 40, 20, 60),
    "default": Scale("default", 2100, 50, 4, 60, (10, 1000, 5000), 1_000_000, 300, 20, 0),
}


def scale_from(value: str) -> Scale:
    if value in SCALES:
        return SCALES[value]
    factor = float(value)  # a multiple of the default
    base = SCALES["default"]
    return Scale(
        f"x{factor:g}",
        max(int(base.conversations * factor), 8),
        base.per_body,
        base.clients,
        base.singles,
        base.thread_sizes,
        max(int(base.scale_messages * factor), 10_000),
        max(int(base.index_docs * factor), 8),
        base.repeats,
        0,
        max(int(base.compare_conversations * factor), 8),
        max(int(base.idless_conversations * factor), 8),
        max(int(base.growth_messages * factor), 30),
    )


# --------------------------------------------------------------------------------------------------------------
# The table


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, name: str, value: str, goal: str = "", verdict: str = "") -> None:
        self.rows.append((name, value, goal, verdict))
        print(f"  {name}: {value}  {goal}  {verdict}".rstrip(), file=sys.stderr, flush=True)

    def render(self, header: list[tuple[str, str]]) -> str:
        width = max(len(name) for name, *_ in self.rows)
        value_width = min(max(len(value) for _, value, *_ in self.rows), 60)
        lines = [f"{key:<12} {value}" for key, value in header]
        lines.append("")
        lines.append(f"{'row':<{width}}  {'figure':<{value_width}}  goal / verdict")
        lines.append(f"{'-' * width}  {'-' * value_width}  {'-' * 20}")
        for name, value, goal, verdict in self.rows:
            lines.append(f"{name:<{width}}  {value:<{value_width}}  {goal} {verdict}".rstrip())
        return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "HOLDS" if ok else "MISSED"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# --------------------------------------------------------------------------------------------------------------
# Machine, database, server


def machine() -> list[tuple[str, str]]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = int(line.split()[1]) // 1024
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("machine", f"{os.cpu_count()} cores, {ram / 1024:.1f} GB RAM, {cpu}"),
    ]


def create_database(base: str, *, keep: bool = False) -> str:
    """A fresh benchmark database; with ``keep``, the one a kept run left (migrated again), made if there is none."""
    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone()
        if exists and keep:
            return database_url(base, BENCH_DB)
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return database_url(base, BENCH_DB)


def drop_database(base: str) -> None:
    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")


def kb_of(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


# --------------------------------------------------------------------------------------------------------------
# HTTP clients (forked processes; the bodies are inherited, not sent over a pipe)

_BODIES: list[bytes] = []
_CLIENT: dict[str, Any] = {}


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, content_type: str) -> tuple[int, dict[str, Any]]:
    conn.request(
        "POST",
        path,
        body=body,
        headers={"Authorization": f"Api-Key {_CLIENT['key']}", "Content-Type": content_type},
    )
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def _client_run(indexes: list[int]) -> list[tuple[int, dict[str, int]]]:
    conn = http.client.HTTPConnection("127.0.0.1", _CLIENT["port"], timeout=600)
    out = []
    for index in indexes:
        status, payload = _post(conn, "/api/v1/ingest/bulk/", _BODIES[index], "application/x-ndjson")
        out.append((status, payload.get("summary", {})))
    conn.close()
    return out


def post_bodies(port: int, key: str, bodies: list[bytes], clients: int) -> tuple[float, dict[str, int]]:
    """Post every body from ``clients`` processes at once; the wall time and the summed outcomes."""
    _BODIES[:] = bodies
    _CLIENT.update(port=port, key=key)
    shares = [list(range(i, len(bodies), clients)) for i in range(clients)]
    context = multiprocessing.get_context("fork")
    with context.Pool(clients) as pool:
        started = time.perf_counter()
        results = pool.map(_client_run, shares)
        elapsed = time.perf_counter() - started
    totals: dict[str, int] = {}
    for share in results:
        for status, summary in share:
            if status != 200:
                raise RuntimeError(f"bulk request answered {status}")
            for outcome, n in summary.items():
                totals[outcome] = totals.get(outcome, 0) + n
    return elapsed, totals


# --------------------------------------------------------------------------------------------------------------
# Database helpers

TABLES = ("chats_conversation", "chats_message", "chats_toolcall", "chats_injectedartifact", "chats_feedback")


def checksum(conn: psycopg.Connection[Any], source_id: int) -> dict[str, tuple[int, str]]:
    """Row count and an md5 over every column of every row of a source, per table (receipts excluded)."""
    out = {}
    for table in TABLES:
        where = (
            "source_id = %s"
            if table == "chats_conversation"
            else ("conversation_id IN (SELECT id FROM chats_conversation WHERE source_id = %s)")
        )
        row = conn.execute(
            f"SELECT count(*), md5(string_agg(md5(t::text), '' ORDER BY id)) FROM {table} t WHERE {where}",
            [source_id],
        ).fetchone()
        assert row is not None
        out[table] = (row[0], row[1] or "")
    return out


def messages_of(conn: psycopg.Connection[Any], source_id: int) -> int:
    row = conn.execute(
        "SELECT count(*) FROM chats_message WHERE conversation_id IN "
        "(SELECT id FROM chats_conversation WHERE source_id = %s)",
        [source_id],
    ).fetchone()
    return int(row[0]) if row else 0


def secondary_indexes(conn: psycopg.Connection[Any], table: str) -> list[tuple[str, str]]:
    """(name, definition) of the table's indexes that back no constraint: the ones that could be dropped."""
    return list(
        conn.execute(
            """
            SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relname = %s AND NOT x.indisunique AND NOT x.indisprimary ORDER BY i.relname
            """,
            [table],
        ).fetchall()
    )


# --------------------------------------------------------------------------------------------------------------
# P1: the ceiling — the rows P1 stored, fetched, then COPYed back under new ids by one Python process

CEILING_TABLES = (
    "chats_conversation",
    "chats_message",
    "chats_toolcall",
    "chats_injectedartifact",
    "chats_feedback",
    "chats_ingestionreceipt",
)


def _columns(conn: psycopg.Connection[Any], table: str) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
            [table],
        )
    ]


def copy_ceiling(url: str, source_id: int, ceiling_source_id: int) -> tuple[float, int]:
    """COPY the rows P1 stored for ``source_id`` again (new ids, another source); seconds and messages."""
    with psycopg.connect(url) as conn:
        conn.adapters.register_loader("jsonb", psycopg.types.string.TextLoader)
        conn.adapters.register_loader("tsvector", psycopg.types.string.TextLoader)
        shift = {
            table: int(conn.execute(f"SELECT coalesce(max(id), 0) + 1000000 FROM {table}").fetchone()[0])  # type: ignore[index]
            for table in CEILING_TABLES
        }
        references = {
            "id": None,
            "conversation_id": "chats_conversation",
            "message_id": "chats_message",
            "parent_id": "chats_message",
            "result_message_id": "chats_message",
            "tool_call_id": "chats_toolcall",
        }
        rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for table in CEILING_TABLES:
            columns = _columns(conn, table)
            select = []
            for column in columns:
                target = table if column == "id" else references.get(column)
                if table == "chats_message" and column == "tool_call_id":
                    target = None  # a string there
                if column in references and target:
                    select.append(f"{column} + {shift[target]}")
                elif column == "uuid":
                    select.append("gen_random_uuid()")
                elif column == "source_id":
                    select.append(str(ceiling_source_id))
                elif column == "external_id" and table == "chats_conversation":
                    select.append("external_id || ':ceiling'")
                else:
                    select.append(column)
            if table in ("chats_conversation", "chats_ingestionreceipt"):
                where = "source_id = %s"
            else:
                where = "conversation_id IN (SELECT id FROM chats_conversation WHERE source_id = %s)"
            fetched = conn.execute(f"SELECT {', '.join(select)} FROM {table} WHERE {where}", [source_id]).fetchall()
            rows[table] = (columns, fetched)
        conn.commit()
        started = time.perf_counter()
        with conn.cursor() as cursor:
            for table, (columns, fetched) in rows.items():
                with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in fetched:
                        copy.write_row(row)
        conn.commit()
        elapsed = time.perf_counter() - started
        return elapsed, len(rows["chats_message"][1])


# A COPY ceiling takes about a second, where the HTTP run it is compared with takes many: its median of this many
# runs, so that one lucky or unlucky second does not decide the ratio.
CEILING_RUNS = 3


def raw_copy_rate(url: str, docs: list[dict[str, Any]]) -> tuple[float, int]:
    """COPY the messages of ``docs`` into one plain table (conversation, position, message as jsonb), as a tool
    that keeps one row per message and nothing else would: (messages per second, median of CEILING_RUNS;
    messages)."""
    rows = [(d["chat_id"], i, json.dumps(m, ensure_ascii=False)) for d in docs for i, m in enumerate(d["messages"])]
    times = []
    with psycopg.connect(url) as conn:
        for _ in range(CEILING_RUNS):
            conn.execute(
                "CREATE TABLE bench_raw_messages (id bigserial PRIMARY KEY, conversation text NOT NULL, "
                "position integer NOT NULL, message jsonb NOT NULL)"
            )
            conn.commit()
            started = time.perf_counter()
            with (
                conn.cursor() as cursor,
                cursor.copy("COPY bench_raw_messages (conversation, position, message) FROM STDIN") as copy,
            ):
                for row in rows:
                    copy.write_row(row)
            conn.commit()
            times.append(time.perf_counter() - started)
            conn.execute("DROP TABLE bench_raw_messages")
            conn.commit()
    return len(rows) / statistics.median(times), len(rows)


# P5 runs the workload this many times in each configuration, alternating the configurations, each run followed by
# its COPY ceiling, and reports the medians: one run of a few seconds on a shared machine swings by a fifth.
P5_RUNS = 3
P5_CLIENTS = (1, 4)
# The worker configuration's broker (a Redis database of its own) and its worker (`make worker`'s pool).
P5_BROKER = "redis://127.0.0.1:6379/13"
P5_WORKER_CONCURRENCY = 2
# A word of every P5 document's system prompt, exactly once: a search for it finds each conversation.
P5_EVERY_DOCUMENT_WORD = "Masterbrain"


@dataclass(frozen=True)
class P5Config:
    label: str  # "default (no broker)" or "with a Celery worker"
    port: int


def p5_sources(runs: int) -> dict[tuple[str, int, int], tuple[int, str]]:
    """A source and its key for every P5 run: (configuration, clients, run) -> (id, key)."""
    from chats.services.sources import api_key_create, source_get_or_create

    out = {}
    for config in ("default", "worker"):
        for clients in P5_CLIENTS:
            for run in range(runs):
                source, _ = source_get_or_create(name=f"compare-{config}-{clients}-{run + 1}")
                out[(config, clients, run)] = (source.pk, api_key_create(source=source, name="bench")[1])
    return out


def searchable_conversations(source_id: int) -> int:
    """How many of the source's conversations a full-text search finds (chats.selectors.search, as the list's
    ?q= does): every P5 document has P5_EVERY_DOCUMENT_WORD once."""
    from chats.models import Conversation
    from chats.selectors.search import full_text_matches

    found, _ = full_text_matches(Conversation.objects.filter(source_id=source_id), P5_EVERY_DOCUMENT_WORD)
    return found.count()


def comparison_workload(
    table: Table,
    scale: Scale,
    url: str,
    configs: dict[str, P5Config],
    sources: dict[tuple[str, int, int], tuple[int, str]],
) -> None:
    """P5: the workload of the comparison with Label Studio (chat documents of about 20 OpenAI-style messages,
    1-5 KB tool results, 500 documents a request) with 1 and with 4 clients, in the default configuration (no
    broker: background tasks inline) and with a Celery worker running, each run against a raw COPY of the same
    messages into one table; P5_RUNS runs of each, the configurations alternated. Right after each run's last
    answer, a full-text search must find every conversation it stored: search-ready is acknowledged."""
    from bench.workload import comparison_documents, ndjson_bodies

    per_body = min(500, max(scale.compare_conversations // max(P5_CLIENTS), 1))
    rates: dict[tuple[str, int], list[float]] = {}
    ratios: dict[tuple[str, int], list[float]] = {}
    ceilings: list[float] = []
    unfound: list[str] = []
    index = 0
    started_all = time.perf_counter()
    for run in range(P5_RUNS):
        for clients in P5_CLIENTS:
            for name, config in configs.items():
                source_id, key = sources[(name, clients, run)]
                docs = comparison_documents(scale.compare_conversations, seed=55 + index, first_index=index * 1_000_000)
                index += 1
                elapsed, _ = post_bodies(config.port, key, ndjson_bodies(docs, per_body=per_body), clients)
                found = searchable_conversations(source_id)  # right after the last answer
                if found != len(docs):
                    unfound.append(f"{config.label}, {clients} client(s), run {run + 1}: {found:,} of {len(docs):,}")
                with psycopg.connect(url) as conn:
                    stored = messages_of(conn, source_id)
                ceiling, _ = raw_copy_rate(url, docs)
                ceilings.append(ceiling)
                rates.setdefault((name, clients), []).append(stored / elapsed)
                ratios.setdefault((name, clients), []).append(stored / elapsed / ceiling)
    took = time.perf_counter() - started_all
    for clients in P5_CLIENTS:
        for name, config in configs.items():
            rate, ratio = statistics.median(rates[(name, clients)]), statistics.median(ratios[(name, clients)])
            table.add(
                f"P5 {config.label}, {clients} client{'s' if clients > 1 else ''}: acknowledged = search-ready",
                f"{rate:,.0f} msgs/s, {ratio:.3f}x the one-table COPY (medians of {P5_RUNS} runs: "
                f"{', '.join(f'{r:,.0f}' for r in rates[(name, clients)])} msgs/s; "
                f"{', '.join(f'{r:.3f}' for r in ratios[(name, clients)])})",
                "goal: >= 0.25 (aim 0.5)",
                verdict(ratio >= 0.25),
            )
    table.add(
        "P5 raw COPY of the same messages, one table",
        f"{statistics.median(ceilings):,.0f} msgs/s, median of the {len(ceilings)} runs' "
        f"({min(ceilings):,.0f}-{max(ceilings):,.0f}; each the median of {CEILING_RUNS}); "
        f"{scale.compare_conversations:,} chat documents a run, {per_body} a request; P5 took {took:.0f} s",
    )
    table.add(
        "P5 search-ready at acknowledgement",
        "; ".join(unfound)
        if unfound
        else f"every conversation of all {index} runs found by a search right after its run's last answer",
        "goal: every conversation",
        verdict(not unfound),
    )


def p5_run(table: Table, scale: Scale, env: dict[str, str], url: str, cores: int, warm_key: str) -> None:
    """P5's two configurations side by side (two gunicorn servers, one with a broker and a Celery worker on the
    same cores), then comparison_workload."""
    import redis
    from django.db import connections

    from bench.server import Worker
    from bench.workload import documents, ndjson_bodies

    sources = p5_sources(P5_RUNS)
    connections.close_all()
    broker = redis.Redis.from_url(P5_BROKER)
    broker.flushdb()
    worker_env = env | {"CELERY_BROKER_URL": P5_BROKER}
    servers: list[Server] = []
    worker: Worker | None = None
    try:
        worker = Worker(worker_env, "bench-p5", concurrency=P5_WORKER_CONCURRENCY)
        servers.append(Server({k: v for k, v in env.items() if k != "CELERY_BROKER_URL"}, cores))
        servers.append(Server(worker_env, cores))
        configs = {
            "default": P5Config("default (no broker)", servers[0].port),
            "worker": P5Config("with a Celery worker", servers[1].port),
        }
        for number, server in enumerate(servers):
            warm = documents(2, seed=990 + number, first_index=4_100_000 + number * 10)
            post_bodies(server.port, warm_key, ndjson_bodies(warm, per_body=2), 1)
        comparison_workload(table, scale, url, configs, sources)
    finally:
        for server in servers:
            server.stop()
        if worker is not None:
            worker.stop()
        broker.flushdb()
        broker.close()


def idless_growth(table: Table, scale: Scale, url: str, port: int, key: str, source_id: int) -> None:
    """P6: id-less conversations sent turn by turn (the growing history each time, no id) end as one
    conversation each."""
    from bench.workload import idless_turns, ndjson_bodies

    turns = 5
    rounds = idless_turns(scale.idless_conversations, turns=turns, seed=66)
    per_body = min(500, max(scale.idless_conversations // scale.clients, 1))
    elapsed = 0.0
    for documents in rounds:
        seconds, _ = post_bodies(port, key, ndjson_bodies(documents, per_body=per_body), scale.clients)
        elapsed += seconds
    sent = sum(len(document) for documents in rounds for document in documents)
    with psycopg.connect(url) as conn:
        conversations = conn.execute(
            "SELECT count(*) FROM chats_conversation WHERE source_id = %s", [source_id]
        ).fetchone()[0]  # type: ignore[index]
        stored = messages_of(conn, source_id)
    expected = scale.idless_conversations
    table.add(
        "P6 id-less growth, turn by turn",
        f"{expected * turns / elapsed:,.0f} documents/s ({sent / elapsed:,.0f} msgs sent/s): "
        f"{expected:,} conversations x {turns} turns -> {conversations:,} conversations, {stored:,} messages",
        f"goal: {expected:,} conversations",
        verdict(conversations == expected and stored == expected * (1 + 2 * turns)),
    )


# The growth row: one conversation grown 2 messages a turn to this many messages (Scale.growth_messages), and the
# turns whose index cost is compared (a window of GROWTH_WINDOW turns ending at each, medians).
GROWTH_EARLY_TURN = 10
GROWTH_WINDOW = 5
MESSAGE_TRIGGER_FUNCTION = "chats_message_search_vector"


def _trigger_stats() -> tuple[int, float]:
    """The message vector trigger's calls and own time (ms) so far in this session, as far as this transaction sees
    them (pg_stat_xact_user_functions holds what the session has not yet reported, which is more than the current
    transaction's: a difference of two readings in one transaction is exact)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT calls, self_time FROM pg_stat_xact_user_functions WHERE funcname = %s", [MESSAGE_TRIGGER_FUNCTION]
        )
        row = cursor.fetchone()
    return (int(row[0]), float(row[1])) if row else (0, 0.0)


def growth(table: Table, scale: Scale) -> None:
    """One conversation grown by 2 messages a turn to scale.growth_messages, through the single-document ingestion
    service (as POST /api/v1/ingest/ stores it), each turn sending only its new messages (the service appends them
    after the active message). The index cost of a turn is the time of the message vector trigger's work in the
    turn's transaction, read from pg_stat_xact_user_functions with track_functions = 'all' (a superuser setting:
    the benchmark connects as postgres); the turn's whole time is reported beside it."""
    from django.db import connection, transaction

    from bench.workload import growth_turn
    from chats.models import Message
    from chats.services.ingestion import conversation_ingest
    from chats.services.sources import source_get_or_create

    source, _ = source_get_or_create(name="growth")
    turns = max(scale.growth_messages // 2, GROWTH_EARLY_TURN + GROWTH_WINDOW)
    index_ms: list[float] = []
    turn_ms: list[float] = []
    calls: list[int] = []
    started_all = time.perf_counter()
    for turn in range(1, turns + 1):
        document = growth_turn(turn, chat_id="growth-1")
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL track_functions = 'all'")
            before = _trigger_stats()
            started = time.perf_counter()
            result = conversation_ingest(source=source, document=document)
            turn_ms.append((time.perf_counter() - started) * 1000)
            after = _trigger_stats()
            if result.messages_added != 2:
                raise RuntimeError(f"growth turn {turn}: {result.outcome}, {result.messages_added} messages added")
        calls.append(after[0] - before[0])
        index_ms.append(after[1] - before[1])
    took = time.perf_counter() - started_all
    stored = Message.objects.filter(conversation__source=source).count()

    def window(values: list[float], last: int) -> float:
        return statistics.median(values[last - GROWTH_WINDOW : last])

    early, late = window(index_ms, GROWTH_EARLY_TURN), window(index_ms, turns)
    ratio = late / early if early else float("inf")
    table.add(
        f"Growth: index cost per turn, turn {GROWTH_EARLY_TURN} and turn {turns:,}",
        f"{early * 1000:.0f} us and {late * 1000:.0f} us (x{ratio:.2f}): the message vector trigger's time in the "
        f"turn's transaction, medians of turns {GROWTH_EARLY_TURN - GROWTH_WINDOW + 1}-{GROWTH_EARLY_TURN} and "
        f"{turns - GROWTH_WINDOW + 1:,}-{turns:,}; {min(calls)}-{max(calls)} trigger calls a turn",
        "goal: <= x2",
        verdict(ratio <= 2 and set(calls) == {2}),
    )
    table.add(
        "Growth: whole turn (ingestion service, in-process)",
        f"{window(turn_ms, GROWTH_EARLY_TURN):.1f} ms at turn {GROWTH_EARLY_TURN}, "
        f"{window(turn_ms, turns):.1f} ms at turn {turns:,} (medians as above); one conversation of "
        f"{stored:,} messages, {turns:,} turns in {took:.0f} s",
    )


def delete_source_rows(url: str, source_id: int) -> None:
    with psycopg.connect(url) as conn:
        ids = "SELECT id FROM chats_conversation WHERE source_id = %s"
        conn.execute("DELETE FROM chats_ingestionreceipt WHERE source_id = %s", [source_id])
        for table in ("chats_feedback", "chats_injectedartifact", "chats_toolcall", "chats_message"):
            if table == "chats_message":
                conn.execute(
                    f"UPDATE chats_toolcall SET result_message_id = NULL WHERE conversation_id IN ({ids})", [source_id]
                )
            conn.execute(f"DELETE FROM {table} WHERE conversation_id IN ({ids})", [source_id])
        conn.execute("DELETE FROM chats_conversation WHERE source_id = %s", [source_id])


# --------------------------------------------------------------------------------------------------------------
# In-process measurements (Django set up in this process)


class _Rollback(Exception):
    pass


# The full-text vectors' GIN indexes and the triggers that build them (chats.search_schema): (index, trigger,
# the index-cost row's label).
FULL_TEXT = (
    ("msg_search_vector_idx", "chats_message_search_vector", "GIN on message.search_vector + its trigger"),
    ("conv_title_vector_idx", "chats_conversation_title_vector", "GIN on conversation.title_vector + its trigger"),
)
TRIGGERS = {"chats_message_search_vector": "chats_message", "chats_conversation_title_vector": "chats_conversation"}


def index_costs(table: Table, scale: Scale, url: str, seed: int) -> None:
    """The in-process bulk path over the same documents with each group of ingest-paid indexes dropped (each run
    inside a transaction that is rolled back, so every run starts from the same tables). The full-text groups drop
    their trigger too: what a message's search vector costs ingest is its GIN entry and the trigger that builds it."""
    from django.db import connection, transaction

    from bench.workload import documents
    from chats import strict_json
    from chats.models import Source
    from chats.services.bulk_writer import conversations_ingest_bulk
    from chats.services.documents import document_prepare

    source = Source.objects.get(name="bench")
    docs = documents(scale.index_docs, seed=seed, first_index=2_000_000)
    lines = [json.dumps(d).encode() for d in docs]
    message_total = 0

    def run(drop: list[str], *, profile: cProfile.Profile | None = None) -> float:
        nonlocal message_total
        elapsed = 0.0
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    for name in drop:
                        if name in TRIGGERS:
                            cursor.execute(f"DROP TRIGGER {name} ON {TRIGGERS[name]}")
                        else:
                            cursor.execute(f"DROP INDEX {name}")
                started = time.perf_counter()
                if profile:
                    profile.enable()
                decoded = [strict_json.loads(line) for line in lines]
                total = 0
                for start in range(0, len(decoded), scale.per_body):
                    results = conversations_ingest_bulk(
                        source=source, documents=decoded[start : start + scale.per_body]
                    )
                    total += sum(r.messages_added for r in results)
                if profile:
                    profile.disable()
                elapsed = time.perf_counter() - started
                message_total = total
                raise _Rollback
        except _Rollback:
            pass
        return elapsed

    with psycopg.connect(url) as conn:
        groups: list[tuple[str, list[str]]] = [("none dropped (all indexes)", [])]
        every: list[str] = []
        for name_of_table in (
            "chats_conversation",
            "chats_message",
            "chats_toolcall",
            "chats_injectedartifact",
            "chats_feedback",
            "chats_ingestionreceipt",
        ):
            names = [name for name, _ in secondary_indexes(conn, name_of_table)]
            every += names
            for gin, trigger, label in FULL_TEXT:
                if gin in names:
                    groups.append((label, [gin, trigger]))
                    names = [n for n in names if n != gin]
            groups.append((f"{len(names)} b-tree(s) on {name_of_table.removeprefix('chats_')}", names))
        groups.append(("every secondary index", every))

    def best(drop: list[str], **options: Any) -> float:
        # The fastest of two runs: the machine is shared, and a slow outlier says nothing about an index.
        return min(run(drop, **options) for _ in range(2))

    run([])  # warm-up
    baseline = best([])
    table.add(
        "P1 in-process bulk path (msgs/s)",
        f"{message_total / baseline:,.0f} msgs/s ({scale.index_docs} docs, {message_total:,} msgs)",
    )
    without: dict[str, float] = {}
    for label, names in groups[1:]:
        elapsed = without[label] = best(names)
        table.add(
            f"P1 index cost: without {label}", f"{message_total / elapsed:,.0f} msgs/s, x{baseline / elapsed:.2f}"
        )
    without_vectors = without.get(FULL_TEXT[0][2], baseline)
    table.add(
        "P1 message search vectors' share of the in-process ingest",
        f"{1 - without_vectors / baseline:.0%} of its time: the GIN on message.search_vector and the trigger that "
        "builds each vector as the row is written (nothing is left to build after it)",
    )

    # Where the time goes: decode, canonical JSON + hash + parse, and the database writes.
    decode = prepare = 0.0
    started = time.perf_counter()
    decoded = [strict_json.loads(line) for line in lines]
    decode = time.perf_counter() - started
    started = time.perf_counter()
    for document in decoded:
        document_prepare(document=document)
    prepare = time.perf_counter() - started
    write = max(baseline - decode - prepare, 0.0)
    table.add(
        "P1 cost split in-process",
        f"decode {decode / baseline:.0%}, hash+parse {prepare / baseline:.0%}, rows+SQL {write / baseline:.0%}",
    )
    profile = cProfile.Profile()
    run([], profile=profile)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(8)
    entries = [line.strip() for line in out.getvalue().splitlines() if re.match(r"\s*\d+(/\d+)?\s+\d", line)][:8]
    table.add("P1 profile (top by own time)", "; ".join(_short_profile(e) for e in entries[:5]))


def _short_profile(entry: str) -> str:
    parts = entry.split(None, 5)
    where = parts[5] if len(parts) > 5 else entry
    where = re.sub(r".*/site-packages/", "", where)
    where = re.sub(rf"{re.escape(str(ROOT))}/", "", where)
    return f"{where} {float(parts[1]):.2f}s"


def _timed_get(client: Any, url: str, repeats: int) -> tuple[list[float], int, int, list[str]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm-up
    with CaptureQueriesContext(connection) as context:
        response = client.get(url)
    # Read them now: every request clears the connection's query log (request_started -> reset_queries).
    sqls = [query["sql"] for query in context.captured_queries]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        client.get(url)
        times.append(time.perf_counter() - started)
    return times, len(sqls), response.status_code, sqls


def _repeats(scale: Scale, size: int) -> int:
    """Fewer repetitions of the slowest pages, so that the run stays within minutes."""
    return scale.repeats if size <= 1000 else max(scale.repeats // 5, 2)


def _bench_admin() -> Any:
    from django.contrib.auth.models import User

    return User.objects.filter(username="bench-admin").first() or User.objects.create_superuser(
        "bench-admin", password=None
    )


def pages(table: Table, scale: Scale) -> None:
    from django.contrib import admin
    from django.db.models import Q
    from django.test import Client
    from django.urls import reverse

    from bench.thread_windows import thread_windows
    from bench.workload import long_thread
    from chats.models import InjectedArtifact, Message, Source, ToolCall
    from chats.services.ingestion import conversation_ingest

    source = Source.objects.get(name="bench")
    client = Client()
    client.force_login(_bench_admin())
    threads = {}
    for size in scale.thread_sizes:
        result = conversation_ingest(source=source, document=long_thread(size, seed=size))
        assert result.conversation is not None and result.conversation.message_count == size, result.errors
        threads[size] = result.conversation

    page_counts, api_counts = set(), set()
    for size, conversation in threads.items():
        times, count, status, _ = _timed_get(client, f"/conversations/{conversation.uuid}/", _repeats(scale, size))
        page_counts.add(count)
        table.add(f"P3 thread page, {size} msgs", f"p50 {ms(pct(times, 0.5))}, {count} queries (HTTP {status})")
    for size, conversation in threads.items():
        times, count, status, _ = _timed_get(
            client, f"/api/v1/conversations/{conversation.uuid}/", _repeats(scale, size)
        )
        if status == 404:
            table.add(f"P3 thread API, {size} msgs", "n/a (the endpoint does not exist yet)")
        else:
            api_counts.add(count)
            table.add(f"P3 thread API, {size} msgs", f"p50 {ms(pct(times, 0.5))}, {count} queries (HTTP {status})")
    table.add(
        "P3 thread query counts constant",
        f"page {sorted(page_counts)}, API {sorted(api_counts) or 'n/a'}",
        "goal: one count per view",
        verdict(len(page_counts) == 1 and len(api_counts) <= 1),
    )
    thread_windows(table, client, threads, scale.repeats)

    mid = sorted(threads)[1]
    conversation = threads[mid]
    page_times, _, _, _ = _timed_get(client, f"/conversations/{conversation.uuid}/", scale.repeats)

    def thread_json() -> str:
        path = list(Message.objects.filter(conversation=conversation, on_active_path=True).values_list("id", flat=True))
        messages = list(
            Message.objects.filter(id__in=path)
            .order_by("depth")
            .values(*[f.attname for f in Message._meta.concrete_fields if f.name != "raw"])
        )
        calls = list(
            ToolCall.objects.filter(conversation=conversation)
            .filter(Q(message_id__in=path) | Q(result_message_id__in=path))
            .values()
        )
        artifacts = list(InjectedArtifact.objects.filter(conversation=conversation, message_id__in=path).values())
        return json.dumps({"messages": messages, "tool_calls": calls, "artifacts": artifacts}, default=str)

    thread_json()
    json_times = []
    for _ in range(scale.repeats):
        started = time.perf_counter()
        thread_json()
        json_times.append(time.perf_counter() - started)
    ratio = pct(page_times, 0.5) / pct(json_times, 0.5)
    table.add(
        f"P3 thread page {mid} msgs / JSON of it",
        f"{ms(pct(page_times, 0.5))} / {ms(pct(json_times, 0.5))} = x{ratio:.2f}",
        "goal: <= x3",
        verdict(ratio <= 3),
    )

    times, count, status, _ = _timed_get(client, "/conversations/", scale.repeats)
    table.add("P3 list page /conversations/", f"p50 {ms(pct(times, 0.5))}, {count} queries (HTTP {status})")
    for model in admin.site._registry:
        if model._meta.app_label != "chats":
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        times, count, status, _ = _timed_get(client, url, max(scale.repeats // 4, 2))
        table.add(
            f"P3 admin {model._meta.model_name} changelist",
            f"p50 {ms(pct(times, 0.5))}, {count} queries (HTTP {status})",
        )


def load_scale(table: Table, scale: Scale, url: str) -> int:
    """Load >= scale.scale_messages messages by COPY under a source of their own; its id."""
    from bench.workload import SCALE_COLUMNS, scale_rows

    per_conversation = 20
    conversations = max(scale.scale_messages // per_conversation, 1)
    with psycopg.connect(url) as conn:
        kept = conn.execute(
            "SELECT s.id, (SELECT count(*) FROM chats_conversation c WHERE c.source_id = s.id) "
            "FROM chats_source s WHERE s.name = 'scale'"
        ).fetchone()
        if kept is not None:
            # A database kept by --keep-database: its P4 rows are read again rather than loaded again.
            if kept[1] != conversations:
                raise SystemExit(
                    f"the kept database holds {kept[1]:,} P4 conversations, not {conversations:,}: "
                    "run once without --keep-database to start afresh"
                )
            conn.execute("ANALYZE")
            total = int(conn.execute("SELECT count(*) FROM chats_message").fetchone()[0])  # type: ignore[index]
            table.add("P4 rows kept from an earlier run", f"{total:,} messages in all, {conversations:,} conversations")
            return int(kept[0])
        inserted = conn.execute(
            "INSERT INTO chats_source (name, description, is_active, created_at) VALUES ('scale', '', true, now()) RETURNING id"
        ).fetchone()
        assert inserted is not None  # INSERT ... RETURNING gives one row
        source_id = int(inserted[0])
        reviewer_id = _bench_admin().pk  # the author of the reviewers' feedback
        offsets = {t: int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {t}").fetchone()[0]) for t in SCALE_COLUMNS}  # type: ignore[index]
        conn.commit()
        # The COPY into chats_message fires the trigger that builds each message's search vector (as ingestion's
        # COPY does); its share of the load is read from the transaction's function statistics.
        conn.execute("SET track_functions = 'all'")
        started = time.perf_counter()
        copies: dict[str, Any] = {}
        with conn.cursor() as cursor, contextlib.ExitStack() as stack:
            # One COPY per table, all open at once on one connection is not possible: buffer per table.
            buffers: dict[str, list[tuple[Any, ...]]] = {t: [] for t in SCALE_COLUMNS}

            def flush(name: str) -> None:
                with cursor.copy(f"COPY {name} ({SCALE_COLUMNS[name]}) FROM STDIN") as copy:
                    for row in buffers[name]:
                        copy.write_row(row)
                buffers[name].clear()

            shift_columns = {
                "chats_conversation": {0: "chats_conversation"},
                "chats_message": {0: "chats_message", 1: "chats_conversation", 4: "chats_message"},
                "chats_toolcall": {
                    0: "chats_toolcall",
                    1: "chats_conversation",
                    2: "chats_message",
                    10: "chats_message",
                },
                "chats_injectedartifact": {
                    0: "chats_injectedartifact",
                    1: "chats_conversation",
                    2: "chats_message",
                    3: "chats_toolcall",
                },
                "chats_feedback": {0: "chats_feedback", 2: "chats_conversation"},
                "chats_contextartifactid": {0: "chats_contextartifactid", 1: "chats_conversation"},
            }
            rows = scale_rows(conversations, per_conversation, source_id=source_id, seed=2026, reviewer_id=reviewer_id)
            for name, row in rows:
                values = list(row)
                for position, target in shift_columns[name].items():
                    if values[position] is not None:
                        values[position] += offsets[target]
                buffers[name].append(tuple(values))
                if name == "chats_conversation" and len(buffers[name]) >= 5000:
                    for table_name in SCALE_COLUMNS:  # parents before children
                        flush(table_name)
            for table_name in SCALE_COLUMNS:
                flush(table_name)
            del copies, stack
        trigger = conn.execute(
            "SELECT coalesce(sum(self_time), 0) FROM pg_stat_xact_user_functions WHERE funcname = %s",
            [MESSAGE_TRIGGER_FUNCTION],
        ).fetchone()
        vectors_seconds = float(trigger[0]) / 1000 if trigger else 0.0
        conn.commit()
        loaded = time.perf_counter() - started
        for name in SCALE_COLUMNS:
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), (SELECT max(id) FROM {name}))")
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        total = int(conn.execute("SELECT count(*) FROM chats_message").fetchone()[0])  # type: ignore[index]
    table.add(
        "P4 rows loaded by COPY",
        f"{total:,} messages in all, {conversations:,} conversations; COPY {loaded:.0f} s "
        f"({conversations * per_conversation / loaded:,.0f} msgs/s), of which the message vector trigger "
        f"{vectors_seconds:.0f} s (built as the COPY writes each row)",
    )
    return source_id


def _plan_summary(sql: str) -> tuple[str, bool]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    root = plan[0]["Plan"]
    scans: list[str] = []
    seq_on_big = False

    def walk(node: dict[str, Any]) -> None:
        nonlocal seq_on_big
        kind = node["Node Type"]
        if "Scan" in kind:
            target = node.get("Index Name") or node.get("Relation Name") or ""
            scans.append(f"{kind} {target}".strip())
            if kind == "Seq Scan" and node.get("Relation Name") in (
                "chats_conversation",
                "chats_message",
                "chats_toolcall",
                "chats_injectedartifact",
                "chats_contextartifactid",
                "chats_feedback",
            ):
                seq_on_big = True
        for child in node.get("Plans", []):
            walk(child)

    walk(root)
    return f"{root['Node Type']} > {', '.join(dict.fromkeys(scans))}", not seq_on_big


def _is_list_query(sql: str) -> bool:
    """Whether ``sql`` reads a page of the list: the page's other queries on conversations (the sources its form
    offers, an EXISTS ... LIMIT 1) are not in its time order."""
    return (
        'FROM "chats_conversation"' in sql
        and "LIMIT" in sql
        and 'ORDER BY "chats_conversation"."last_activity_at"' in sql
    )


def scale_reads(table: Table, scale: Scale, source_id: int) -> None:
    from django.db import connection
    from django.test import Client

    from bench.workload import AND_QUERY, COMMON_WORD, RARE_WORDS, SCALE_START, scale_artifact_id
    from chats.models import Conversation, Label
    from chats.selectors import conversations as selectors

    client = Client()
    client.force_login(_bench_admin())
    deep = min(1000, Conversation.objects.count() // selectors.PAGE_SIZE - 1)
    row = Conversation.objects.order_by("-last_activity_at", "-id")[
        deep * selectors.PAGE_SIZE - 1 : deep * selectors.PAGE_SIZE
    ][0]
    cursor = selectors.encode_cursor(row)
    start = SCALE_START.date()
    model = "qwen3.5-plus"
    reads = [
        ("list, first page", "/conversations/"),
        (f"list, page {deep} deep (keyset)", "/conversations/?" + urlencode({"after": cursor})),
        (
            "filtered list (model + tool calls + dates)",
            "/conversations/?"
            + urlencode(
                {
                    "model": model,
                    "has_tool_calls": "true",
                    "date_from": start.isoformat(),
                    "date_to": date(start.year + 1, 12, 31).isoformat(),
                }
            ),
        ),
        (f"full-text search ?q={RARE_WORDS[0]}, page", "/conversations/?" + urlencode({"q": RARE_WORDS[0]})),
        (
            f"full-text search ?q={RARE_WORDS[0]}, API",
            "/api/v1/conversations/?" + urlencode({"q": RARE_WORDS[0]}),
        ),
        (f"full-text search ?q={COMMON_WORD} (common word), page", "/conversations/?" + urlencode({"q": COMMON_WORD})),
        (f"full-text search ?q={AND_QUERY} (two-word AND), page", "/conversations/?" + urlencode({"q": AND_QUERY})),
        ("artifact-id lookup", "/conversations/?" + urlencode({"artifact_id": scale_artifact_id(17)})),
        # The auditors' filters (bench.workload.scale_flags says how many conversations each one finds).
        *(
            (f"?{key}={value}", "/conversations/?" + urlencode({key: value}))
            for key, value in [
                ("workflow", "protocol_qa"),
                ("has_warnings", "unanswered_call"),
                ("has_warnings", "orphan_result"),
                ("has_warnings", "invalid_arguments"),
                ("has_warnings", "malformed_artifact_id"),
                ("has_warnings", "policy_violation"),
                ("has_warnings", "any"),
                ("feedback_origin", "reviewer"),
                ("feedback_origin", "chatgpt"),
                ("model_setting", "enable_thinking=true"),
                ("policy", "permitted"),
            ]
        ),
        (
            "?has_warnings=any&workflow=record_qa&feedback_origin=masterbrain, API",
            "/api/v1/conversations/?"
            + urlencode({"has_warnings": "any", "workflow": "record_qa", "feedback_origin": "masterbrain"}),
        ),
        # Every other filter of chats.filters.conversations.ConversationFilter, alone, and the other order.
        *(
            (f"?{key}={value}", "/conversations/?" + urlencode({key: value}))
            for key, value in [
                ("source", "scale"),
                ("user", "airalogy.id.user.7"),
                ("format", "openai"),
                ("role", "tool"),
                ("tool_name", "airalogy_search"),
                ("artifact_kind", "protocol"),
                ("status", "unreviewed"),
                ("score", "1"),
                ("label", BENCH_LABEL),  # on no feedback: the filter must not walk the list to find that out
                ("sort", "oldest"),
            ]
        ),
    ]
    Label.objects.get_or_create(name=BENCH_LABEL)
    medians = {}
    for label, url in reads:
        times, count, status, sqls = _timed_get(client, url, scale.repeats)
        main = [s for s in sqls if _is_list_query(s)]
        summary, indexed = _plan_summary(main[-1]) if main else ("(no list query)", False)
        medians[label] = pct(times, 0.5)
        goal = ""
        ok = indexed
        if label.startswith(("full-text", "list, first page")):
            goal = "goal: p95 <= 50 ms, index"
            ok = ok and pct(times, 0.95) <= 0.050
        else:
            goal = "goal: index"
        table.add(
            f"P4 {label}",
            f"p50 {ms(pct(times, 0.5))} p95 {ms(pct(times, 0.95))}, {count} q (HTTP {status}); plan: {summary}",
            goal,
            verdict(ok),
        )
    # Where a search request spends its time, beside the database's own execution time of its list query.
    search_url = reads[4][1]
    profile = cProfile.Profile()
    profile.enable()
    client.get(search_url)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(8)
    entries = [line.strip() for line in out.getvalue().splitlines() if re.match(r"\s*\d+(/\d+)?\s+\d", line)][:8]
    table.add("P4 search (API) profile (top by own time)", "; ".join(_short_profile(e) for e in entries[:5]))
    _, _, _, sqls = _timed_get(client, search_url, 1)
    main = [sql for sql in sqls if _is_list_query(sql)]
    if main:
        with connection.cursor() as db_cursor:
            db_cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + main[-1])
            plan = db_cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
        table.add("P4 search (API) list query in the database", f"{plan[0]['Execution Time']:.1f} ms (EXPLAIN ANALYZE)")
    first, deep_label = list(medians)[:2]
    ratio = medians[deep_label] / medians[first]
    table.add("P4 deep page / first page", f"x{ratio:.2f}", "goal: <= x2", verdict(ratio <= 2))
    _ = source_id


def trends_reads(table: Table, scale: Scale) -> None:
    """The Trends page (/trends/) over the P4 rows: 12 weeks and 30 days up to the latest conversation (with the
    two busiest models compared, as the page does by default) and the longest range the page allows; each a handful of
    grouped queries over the daily rollups (chats.selectors.trends). The P4 rows are loaded by COPY, which no
    ingestion follows: the rollups are rebuilt first (`manage.py rollup_trends`), and that rebuild is timed too."""
    from django.db.models import Max
    from django.test import Client

    from chats.models import Conversation
    from chats.services.trend_rollups import trends_rollup_all

    started = time.perf_counter()
    keys = trends_rollup_all()
    table.add(
        "P4 trends rollups rebuilt from the rows", f"{ms(time.perf_counter() - started)}, {keys:,} days of sources"
    )

    client = Client()
    client.force_login(_bench_admin())
    latest = Conversation.objects.aggregate(latest=Max("last_activity_at"))["latest"]
    last = latest.date().isoformat() if latest else date.today().isoformat()
    for label, query in (
        ("12 weeks", {"date_to": last}),
        ("30 days", {"bucket": "day", "date_to": last}),
        # The longest range the page allows: the cost follows the rollups' rows (days x sources x models x workflows).
        ("104 weeks", {"date_to": last, "periods": "104"}),
    ):
        times, count, status, _ = _timed_get(client, "/trends/?" + urlencode(query), scale.repeats)
        table.add(
            f"P4 trends page, {label}",
            f"p50 {ms(pct(times, 0.5))} p95 {ms(pct(times, 0.95))}, {count} q (HTTP {status})",
            "goal: p95 < 150 ms",
            verdict(status == 200 and pct(times, 0.95) < 0.150),
        )


# --------------------------------------------------------------------------------------------------------------
# P4 audit: the audit log's page (/audit/) over >= 1,000,000 events

AUDIT_ACTIONS = (  # (action, share of the log, target type)
    ("conversation.appended", 40, "conversation"),
    ("conversation.created", 20, "conversation"),
    ("feedback.created", 15, "feedback"),
    ("feedback.updated", 10, "feedback"),
    ("conversation.status_changed", 8, "conversation"),
    ("conversation.exported", 5, "conversation"),
    ("feedback.deleted", 1, "feedback"),
    ("api_key.created", 1, "api_key"),
)
AUDIT_PEOPLE = 40  # reviewers "reviewer-0".. acting in the log, beside the sources' keys
AUDIT_CONVERSATIONS = 100_000  # distinct conversations the events are about (at 1,000,000 events)


def load_audit_log(table: Table, url: str, events: int) -> None:
    """``events`` audit events by one INSERT ... SELECT over generate_series (the append-only trigger refuses
    UPDATE and DELETE, not INSERT): the actions in AUDIT_ACTIONS' shares, half by the sources' keys and half by
    AUDIT_PEOPLE reviewers, about AUDIT_CONVERSATIONS conversations (scaled), a year of time in id order. The
    hashes are unique placeholders: the chain is not what is measured here."""
    buckets = []
    low = 0
    for action, share, target in AUDIT_ACTIONS:
        buckets.append(f"WHEN g.r < {low + share} THEN '{action}|{target}'")
        low += share
    conversations = max(events * AUDIT_CONVERSATIONS // 1_000_000, 100)
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        first = conn.execute("SELECT coalesce(max(id), 0) FROM chats_auditevent").fetchone()[0]  # type: ignore[index]
        conn.execute(
            f"""
            INSERT INTO chats_auditevent (id, actor_id, actor_username, action, target_type, target_id,
                conversation_uuid, before, after, created_at, prev_hash, event_hash)
            SELECT %(first)s + g.i, NULL,
                CASE WHEN g.i %% 2 = 0 THEN 'source:' || (ARRAY['bench', 'logger', 'batch'])[1 + g.i %% 3]
                     ELSE 'reviewer-' || (g.i %% %(people)s) END,
                split_part(g.kind, '|', 1), split_part(g.kind, '|', 2),
                CASE WHEN split_part(g.kind, '|', 2) = 'api_key' THEN (g.i %% 500)::text ELSE g.conv::text END,
                CASE WHEN split_part(g.kind, '|', 2) = 'api_key' THEN NULL ELSE g.conv END,
                CASE WHEN g.kind LIKE 'feedback.updated%%' THEN '{{"score": 1, "comment": "fine"}}'::jsonb END,
                jsonb_build_object('score', -1, 'comment', 'wrong primer', 'messages_added', g.i %% 7),
                now() - interval '365 days' + (g.i * interval '365 days' / %(events)s),
                md5('p' || g.i) || md5('q' || g.i), md5('e' || g.i) || md5('f' || g.i)
            FROM (
                SELECT i, CASE {" ".join(buckets)} END AS kind,
                       md5('conversation' || (hashint %% %(conversations)s))::uuid AS conv
                FROM (SELECT i, (i::bigint * 7919) %% 100 AS r, abs(hashtext(i::text)::bigint) AS hashint
                      FROM generate_series(1, %(events)s) AS i) AS numbered
            ) AS g
            """.replace("g.r", "r"),
            {"first": first, "people": AUDIT_PEOPLE, "events": events, "conversations": conversations},
        )
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('chats_auditevent', 'id'), (SELECT max(id) FROM chats_auditevent))"
        )
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE chats_auditevent")
    table.add(
        "P4 audit events loaded (INSERT ... SELECT)",
        f"{events:,} events about {conversations:,} conversations in {time.perf_counter() - started:.0f} s",
    )


def _audit_plan(sql: str) -> tuple[str, bool]:
    """The plan of the page's event query, and whether it reads the events through an index (no Seq Scan of the
    events, no Sort of more rows than a page)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    nodes: list[str] = []
    indexed = True

    def walk(node: dict[str, Any]) -> None:
        nonlocal indexed
        kind = node["Node Type"]
        if "Scan" in kind:
            nodes.append(f"{kind} {node.get('Index Name') or node.get('Relation Name') or ''}".strip())
            if kind == "Seq Scan" and node.get("Relation Name") == "chats_auditevent":
                indexed = False
        if kind == "Sort" and node.get("Actual Rows", 0) > 1000:
            indexed = False
            nodes.append(f"Sort of {node['Actual Rows']:,} rows")
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return f"{', '.join(dict.fromkeys(nodes))}; {plan[0]['Execution Time']:.1f} ms in the database", indexed


def audit_reads(table: Table, scale: Scale, url: str) -> None:
    """The audit page (/audit/) as an auditor who is not staff: first page, a deep keyset page, and each kind of
    filter, with the query count, the event query's plan and whether an index serves it."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from chats.models import AuditEvent

    load_audit_log(table, url, scale.scale_messages)
    auditor = User.objects.filter(username="bench-auditor").first()
    if auditor is None:
        auditor = User.objects.create_user("bench-auditor", password=None)
        auditor.groups.add(Group.objects.get(name="Auditors"))
    client = Client()
    client.force_login(auditor)
    total = AuditEvent.objects.count()
    middle = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[total // 2]
    some_conversation = (
        AuditEvent.objects.filter(action="feedback.updated").order_by("id").values_list("conversation_uuid", flat=True)
    )[0]
    # A month of the log: its middle one, whatever day the benchmark runs.
    month_start = AuditEvent.objects.filter(pk=middle).values_list("created_at", flat=True)[0].date().replace(day=1)
    month_last = date.fromordinal(
        date(month_start.year + (month_start.month == 12), month_start.month % 12 + 1, 1).toordinal() - 1
    )
    reads = [
        ("first page", "/audit/"),
        (f"page {total // 2 // 50:,} deep (keyset)", "/audit/?" + urlencode({"after": middle})),
        ("?action=feedback.deleted (1%)", "/audit/?" + urlencode({"action": "feedback.deleted"})),
        ("?actor=reviewer-7", "/audit/?" + urlencode({"actor": "reviewer-7"})),
        ("?target_type=api_key", "/audit/?" + urlencode({"target_type": "api_key"})),
        ("?conversation= (one's timeline)", "/audit/?" + urlencode({"conversation": some_conversation})),
        (
            "?action=feedback.updated in a month",
            "/audit/?"
            + urlencode(
                {"action": "feedback.updated", "date_from": month_start.isoformat(), "date_to": month_last.isoformat()}
            ),
        ),
    ]
    for label, page_url in reads:
        times, count, status, sqls = _timed_get(client, page_url, scale.repeats)
        main = [s for s in sqls if 'FROM "chats_auditevent"' in s and "LIMIT 51" in s]
        summary, indexed = _audit_plan(main[-1]) if main else ("(no event query)", False)
        table.add(
            f"P4 audit {label}",
            f"p50 {ms(pct(times, 0.5))} p95 {ms(pct(times, 0.95))}, {count} q (HTTP {status}); plan: {summary}",
            "goal: index, p95 <= 100 ms",
            verdict(indexed and pct(times, 0.95) <= 0.100),
        )


# --------------------------------------------------------------------------------------------------------------
# L1: the parsers' cost against the size of their input (in-process, no database)


def parser_cost(table: Table) -> None:
    from bench.parser_cost import MAX_GROWTH, worst

    figures, cases = worst()
    table.add(
        "L1 parser cost ratio at x100 bytes (worst case)",
        f"x{figures.time_ratio:,.0f} the time for x{figures.bytes_ratio:,.0f} the bytes "
        f"(cost per byte x{figures.growth:.2f}): {figures.case}, worst of {cases} cases",
        f"goal: cost per byte <= x{MAX_GROWTH:g}",
        verdict(figures.growth <= MAX_GROWTH),
    )


# --------------------------------------------------------------------------------------------------------------
# The run


def main() -> int:
    global BENCH_DB
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="default", help="smoke, default, or a multiple of the default (0.1, 2)")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--database-name", default=BENCH_DB, help="the benchmark's own database, dropped at the end")
    parser.add_argument(
        "--skip", default="", help="comma-separated parts to skip: p3, p4, audit, p5, p6, growth, memory, index, l1"
    )
    parser.add_argument(
        "--only",
        choices=["p4", "p5", "growth"],
        help="run this part alone (p4: load the P4 tables and read them; p5: the comparison workload in both "
        "configurations; growth: one conversation grown turn by turn)",
    )
    parser.add_argument(
        "--keep-database",
        action="store_true",
        help="keep the database at the end, and reuse one kept before (with --only p4: its P4 rows, not loaded again)",
    )
    args = parser.parse_args()
    scale = scale_from(args.scale)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*_bench[a-z0-9_]*", args.database_name):
        parser.error("--database-name must be a plain name containing _bench (it is dropped at the end)")
    BENCH_DB = args.database_name
    skip = {part.strip().lower() for part in args.skip.split(",") if part.strip()}
    if urlsplit(args.database_url).hostname not in ("127.0.0.1", "localhost", "::1"):
        parser.error("the benchmark runs against a local PostgreSQL only")
    cores = os.cpu_count() or 1
    table = Table()
    if args.keep_database and (args.only != "p4" or "audit" not in skip):
        parser.error(
            "--keep-database goes with --only p4 --skip audit (the other parts, and the audit log's, count on a "
            "fresh database)"
        )
    url = create_database(args.database_url, keep=args.keep_database)
    env = server_env(url)
    env["ALLOWED_HOSTS"] += ",testserver"  # this process also serves P3 and P4 through Django's test client
    os.environ.update(env)
    server: Server | None = None
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connection, connections

        from bench.workload import body_near, documents, encode, ndjson_bodies
        from chats.services.sources import api_key_create, source_get_or_create

        call_command("migrate", verbosity=0)
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            pg_version = cursor.fetchone()[0]
        header = [
            *machine(),
            (
                "versions",
                f"Python {platform.python_version()}, Django {django.get_version()}, PostgreSQL {pg_version}, "
                f"psycopg {psycopg.__version__}",
            ),
            (
                "scale",
                f"{scale.name}: P1 {scale.conversations} conversations in bodies of {scale.per_body}, "
                f"{scale.clients} clients, {cores} gunicorn workers; P3 threads {scale.thread_sizes}; "
                f"P4 {scale.scale_messages:,} messages",
            ),
        ]
        if args.only == "p4":
            source_id = load_scale(table, scale, url)
            scale_reads(table, scale, source_id)
            trends_reads(table, scale)
            if "audit" not in skip:
                audit_reads(table, scale, url)
            connections.close_all()
            print(table.render(header))
            return 0

        source, _ = source_get_or_create(name="bench")
        _, key = api_key_create(source=source, name="bench")
        ceiling_source, _ = source_get_or_create(name="ceiling")
        idless_source, _ = source_get_or_create(name="idless")
        _, idless_key = api_key_create(source=idless_source, name="bench")
        connections.close_all()

        if args.only == "p5":
            p5_run(table, scale, env, url, cores, key)
            connections.close_all()
            print(table.render(header))
            return 0
        if args.only == "growth":
            growth(table, scale)
            connections.close_all()
            print(table.render(header))
            return 0

        # ---- P1
        docs = documents(scale.conversations, seed=6)
        bodies = ndjson_bodies(docs, per_body=scale.per_body)
        server = Server(env, cores)
        warm = documents(2, seed=999, first_index=4_000_000)
        post_bodies(server.port, key, ndjson_bodies(warm, per_body=2), 1)
        elapsed, totals = post_bodies(server.port, key, bodies, scale.clients)
        with psycopg.connect(url) as conn:
            stored = messages_of(conn, source.pk)
        p1_rate = stored / elapsed
        table.add(
            "P1 ingest over HTTP (msgs/s)",
            f"{p1_rate:,.0f} msgs/s: {totals.get('created', 0):,} conversations, {stored:,} messages, "
            f"{sum(len(b) for b in bodies) / 1e6:.0f} MB in {elapsed:.1f} s",
        )
        copy_times = []
        for _ in range(CEILING_RUNS):
            copy_seconds, copied = copy_ceiling(url, source.pk, ceiling_source.pk)
            copy_times.append(copy_seconds)
            delete_source_rows(url, ceiling_source.pk)
        ceiling = copied / statistics.median(copy_times)
        table.add(
            "P1 raw COPY of the same rows (msgs/s)",
            f"{ceiling:,.0f} msgs/s ({copied:,} messages and their rows; median of {CEILING_RUNS})",
        )
        table.add("P1 ratio HTTP / COPY", f"{p1_rate / ceiling:.2f}", "goal: >= 0.5", verdict(p1_rate / ceiling >= 0.5))

        singles = documents(scale.singles, seed=77, first_index=1_000_000)
        conn_http = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        _CLIENT.update(port=server.port, key=key)
        latencies = []
        for document in singles:
            started = time.perf_counter()
            status, _ = _post(conn_http, "/api/v1/ingest/", encode(document), "application/json")
            latencies.append(time.perf_counter() - started)
            assert status in (200, 201), status
        table.add(
            "P1 single-document ingest latency",
            f"p50 {ms(pct(latencies, 0.5))}, p95 {ms(pct(latencies, 0.95))} ({len(singles)} documents, one client)",
        )

        # ---- P2
        with psycopg.connect(url) as conn:
            before = checksum(conn, source.pk)
        elapsed2, totals2 = post_bodies(server.port, key, bodies, scale.clients)
        with psycopg.connect(url) as conn:
            after = checksum(conn, source.pk)
        p2_rate = stored / elapsed2
        table.add("P2 replay over HTTP (msgs/s)", f"{p2_rate:,.0f} msgs/s ({elapsed2:.1f} s), outcomes {totals2}")
        table.add("P2 ratio replay / P1", f"{p2_rate / p1_rate:.2f}", "goal: >= 1.0", verdict(p2_rate / p1_rate >= 1.0))
        unchanged = before == after and totals2.get("unchanged", 0) == scale.conversations
        table.add(
            "P2 database unchanged (counts + md5)",
            ", ".join(f"{t.removeprefix('chats_')} {n:,}" for t, (n, _) in after.items()),
            "goal: identical",
            verdict(unchanged),
        )

        if "p6" not in skip:
            idless_growth(table, scale, url, server.port, idless_key, idless_source.pk)

        if "index" not in skip:
            index_costs(table, scale, url, seed=4242)

        # ---- Memory: one worker, one bulk request at the body-size limit
        server.stop()
        server = None
        if "memory" not in skip:
            limit = scale.memory_body or settings.MASTERBRAIN_MAX_BODY_BYTES
            body = body_near(limit, settings.MASTERBRAIN_MAX_BULK_ITEMS, seed=31337, first_index=3_000_000)
            server = Server(env, 1)
            post_bodies(server.port, key, ndjson_bodies(documents(2, seed=998, first_index=5_000_000), per_body=2), 1)
            worker = server.workers()[0]
            idle = kb_of(worker, "VmHWM")
            post_bodies(server.port, key, [body], 1)
            peak = kb_of(worker, "VmHWM")
            server.stop()
            server = None
            table.add(
                "Memory: worker peak RSS, bulk at the limit",
                f"{peak / 1024:.0f} MB peak ({idle / 1024:.0f} MB before) for a {len(body) / 1e6:.1f} MB body "
                f"(limit {limit / 1e6:.1f} MB): x{(peak - idle) * 1024 / len(body):.1f} the body",
                "goal: bounded by the body limit",
                verdict(True),
            )

        # ---- P5 (servers of its own, on the same cores), growth (in-process)
        if "p5" not in skip:
            p5_run(table, scale, env, url, cores, key)
        if "growth" not in skip:
            growth(table, scale)

        # ---- P3, P4 (in-process)
        if "p3" not in skip:
            pages(table, scale)
        if "p4" not in skip:
            source_id = load_scale(table, scale, url)
            scale_reads(table, scale, source_id)
            trends_reads(table, scale)
        if "audit" not in skip:
            audit_reads(table, scale, url)
        if "l1" not in skip:
            parser_cost(table)
        connections.close_all()
        print(table.render(header))
        return 0
    finally:
        if server is not None:
            server.stop()
        with contextlib.suppress(Exception):
            from django.db import connections as django_connections

            django_connections.close_all()
        if not args.keep_database:
            drop_database(args.database_url)


if __name__ == "__main__":
    sys.exit(main())
