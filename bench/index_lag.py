"""P5 again with the search vectors built as production builds them: by a Celery worker after each ingestion commits.

Two phases against one gunicorn server and one worker (`make worker`'s two processes), on the same cores:

- burst: the P5 workload as fast as the clients can send it. The ingest rate with the indexer running, and the
  index lag when ingestion outruns the indexer (a vector of these conversations, kilobytes of JSON tool results
  each, costs more than storing them: the backlog drains after the burst);
- paced: a steady stream below the indexer's capacity (PACED_PER_SECOND conversations a second), the lag a
  conversation sees in ordinary operation.

The lag of a conversation runs from the answer to the bulk request that stored it to the moment its search vector
is built (it is searchable before that too, through the stale rows' probe; the index serves it from then on). A
thread polls the conversations' ``search_stale`` marks every POLL_SECONDS, which bounds each lag's resolution.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import psycopg
import redis

from bench.server import Server, Worker
from bench.workload import comparison_documents, encode

BROKER = "redis://127.0.0.1:6379/13"
POLL_SECONDS = 0.05
WORKER_CONCURRENCY = 2  # `make worker`'s default
# How long the last conversations may take to be indexed before the row reports them missing.
DRAIN_SECONDS = 180
PACED_BODY = 20  # conversations a request in the paced phase
PACED_PER_SECOND = 40
PACED_SECONDS = 15

Body = tuple[bytes, list[str]]


@dataclass
class Watch:
    """When each conversation of a source was first seen indexed (time.monotonic), by a polling thread."""

    url: str
    source_id: int
    indexed: dict[str, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                rows = conn.execute(
                    "SELECT external_id FROM chats_conversation WHERE source_id = %s AND NOT search_stale",
                    [self.source_id],
                ).fetchall()
                now = time.monotonic()
                for (external_id,) in rows:
                    self.indexed.setdefault(external_id, now)
                time.sleep(POLL_SECONDS)

    def wait_for(self, ids: list[str]) -> None:
        deadline = time.monotonic() + DRAIN_SECONDS
        while any(i not in self.indexed for i in ids) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def _bodies(docs: list[dict[str, Any]], per_body: int) -> list[Body]:
    return [
        (b"\n".join(encode(d) for d in docs[i : i + per_body]), [d["chat_id"] for d in docs[i : i + per_body]])
        for i in range(0, len(docs), per_body)
    ]


def _post_bodies(port: int, key: str, bodies: list[Body], clients: int, *, interval: float = 0) -> dict[str, float]:
    """Post the bodies from ``clients`` threads (each body ``interval`` seconds after the one before it, when
    given); when each external id was answered (time.monotonic)."""
    answered: dict[str, float] = {}
    lock = threading.Lock()
    start = time.monotonic()

    def send(share: list[tuple[int, Body]]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        for index, (body, ids) in share:
            if interval:
                time.sleep(max(0.0, start + index * interval - time.monotonic()))
            headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/x-ndjson"}
            conn.request("POST", "/api/v1/ingest/bulk/", body=body, headers=headers)
            response = conn.getresponse()
            payload = json.loads(response.read())
            now = time.monotonic()
            if response.status != 200 or payload["summary"]["created"] != len(ids):
                raise RuntimeError(f"bulk request answered {response.status}: {payload.get('summary')}")
            with lock:
                answered.update(dict.fromkeys(ids, now))
        conn.close()

    numbered = list(enumerate(bodies))
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(send, numbered[i::clients]) for i in range(clients)]:
            future.result()
    return answered


def _lags(answered: dict[str, float], indexed: dict[str, float]) -> tuple[str, bool, float]:
    """The lags' summary, whether every conversation was indexed, and the p95."""
    lags = sorted(indexed[e] - answered[e] for e in answered if e in indexed)
    missing = len(answered) - len(lags)
    if not lags:
        return "no conversation was indexed", False, float("inf")
    p50, p95 = lags[len(lags) // 2], lags[min(len(lags) - 1, int(len(lags) * 0.95))]
    text = f"p50 {p50:.2f} s, p95 {p95:.2f} s, max {lags[-1]:.2f} s over {len(lags):,} conversations"
    if missing:
        text += f"; {missing} not indexed after {DRAIN_SECONDS} s"
    return text, missing == 0, p95


def index_lag(
    add: Callable[..., None],
    *,
    env: dict[str, str],
    url: str,
    source_id: int,
    key: str,
    conversations: int,
    per_body: int,
    clients: int,
    workers: int,
    messages_of: Callable[[psycopg.Connection[Any], int], int],
    verdict: Callable[[bool], str],
) -> None:
    """The burst and the paced phase (see the module's docstring); add their rows."""
    broker = redis.Redis.from_url(BROKER)
    broker.flushdb()
    env = env | {"MASTERBRAIN_SEARCH_INDEXER": "tasks", "CELERY_BROKER_URL": BROKER}
    burst = comparison_documents(conversations, seed=91, first_index=5_000_000)
    paced = comparison_documents(PACED_PER_SECOND * PACED_SECONDS, seed=92, first_index=6_000_000)
    worker = Worker(env, "bench-indexer", concurrency=WORKER_CONCURRENCY)
    server = Server(env, workers)
    watch = Watch(url, source_id)
    try:
        started = time.monotonic()
        answered = _post_bodies(server.port, key, _bodies(burst, per_body), clients)
        elapsed = max(answered.values()) - started
        watch.wait_for(list(answered))
        drained = max(watch.indexed.get(e, float("nan")) for e in answered) - max(answered.values())
        with psycopg.connect(url) as conn:
            stored = messages_of(conn, source_id)
        paced_answered = _post_bodies(
            server.port, key, _bodies(paced, PACED_BODY), 1, interval=PACED_BODY / PACED_PER_SECOND
        )
        watch.wait_for(list(paced_answered))
    finally:
        watch.close()
        server.stop()
        worker.stop()
        broker.flushdb()
        broker.close()
    add(
        "P5 burst, vectors by a Celery worker",
        f"{stored / elapsed:,.0f} msgs/s: {len(burst):,} chat documents, {stored:,} messages, {per_body} a request, "
        f"in {elapsed:.1f} s, with a worker of {WORKER_CONCURRENCY} processes building vectors on the same "
        f"{workers} cores; every vector built {drained:.1f} s after the last answer",
    )
    text, complete, _ = _lags(answered, watch.indexed)
    add("P5 burst index lag (answer to vector built)", text, "goal: none left behind", verdict(complete))
    text, complete, p95 = _lags(paced_answered, watch.indexed)
    add(
        f"P5 paced index lag ({PACED_PER_SECOND} conversations/s)",
        f"{text} (polled every {POLL_SECONDS * 1000:.0f} ms)",
        "goal: p95 <= 5 s",
        verdict(complete and p95 <= 5),
    )
