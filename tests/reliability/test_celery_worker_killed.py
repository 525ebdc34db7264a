"""A Celery worker killed in the middle of an asynchronous bulk ingest: the task is delivered again, and every
document is stored exactly once.

The real stack: gunicorn (bench.server) and a real `celery -A masterbrain_site worker`, both on a PostgreSQL
database of their own, with Redis (database 11, flushed before and after) as the broker. A bulk request with
`?async=true` stores its documents as queued receipts and answers 202; the worker applies them in chunks, one
transaction each (chats.services.ingest_queue). Once a chunk has committed and the next one is being written,
the worker's whole process group gets SIGKILL. A fresh worker then finishes the job.

Why the task comes back:

- acks_late: the worker acknowledges the message only once the task has returned, so a worker that dies while it
  runs has not acknowledged it. On Redis an unacknowledged message waits in the `unacked` set with the time it was
  delivered;
- visibility timeout (CELERY_VISIBILITY_TIMEOUT, 4 s here): a worker puts back on the queue every message that
  has stayed unacknowledged for longer (a worker does so as it starts, and then periodically), so the fresh worker
  takes it again. It must be longer than any task takes, or a task still running is delivered a second time (which
  the receipt locks make harmless, but wasteful);
- prefetch 1 (CELERY_WORKER_PREFETCH_MULTIPLIER): a worker holds one message at a time, so a dead worker takes
  no other message down with it, and no message waits behind a long task on a busy worker;
- reject_on_worker_lost: with the prefork pool, a pool process that dies (the out-of-memory killer) while its
  main process lives has its message requeued at once instead of being acknowledged as failed.

The worker here runs the solo pool (--pool=solo, one process: the task runs in the process that holds the broker
connection). SIGKILL then takes down everything at once, as a lost machine or container does: nobody is left to
reject the message, and its return rests on the visibility timeout alone, the case that must never lose a
document. (With prefork, killing the whole process group is the same case; killing only the child is the
reject_on_worker_lost case.)

What the kill must leave: the chunk that had committed, whole, with its receipts final; the chunk being written,
nothing (its conversations and receipts' outcomes are one transaction); the rest queued. What the second worker
must leave: every receipt final, every document stored once, with as many messages as it has, and one audit event
per conversation.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Iterator
from typing import Any, cast

import psycopg
import pytest
import redis

from bench.server import Database, Server, Worker, database_client_ports
from bench.workload import documents, ndjson_bodies
from chats.services.ingest_queue import QUEUED_CHUNK
from tests.reliability import base_url
from tests.reliability.test_worker_killed import external_id, message_count, scalar

# The broker is a fixed Redis database that the test flushes: its tests run one at a time on one worker.
pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.xdist_group("redis-db-11")]

BROKER = "redis://127.0.0.1:6379/11"
# Seconds: short, for the redelivery to come soon. The task runs longer than that, which only one worker at a time
# makes safe here (in production it is an hour; and the receipt locks make a second delivery cost work only).
VISIBILITY_TIMEOUT = 4
DOCUMENT_COUNT = 4 * QUEUED_CHUNK  # about 8,000 messages: four chunks of a second or more each


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(BROKER)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def stack(broker: redis.Redis) -> Iterator[tuple[Database, Server, str, dict[str, str]]]:
    database = Database(base_url(), f"mb_celery_{os.getpid()}")
    server = None
    try:
        key = database.create_source("celery")
        env = database.env | {"CELERY_BROKER_URL": BROKER, "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT)}
        server = Server(env, workers=1)
        yield database, server, key, env
    finally:
        if server:
            server.stop()
        database.drop()


def post_async(port: int, key: str, body: bytes) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(
            "POST",
            "/api/v1/ingest/bulk/?async=true",
            body=body,
            headers={"Authorization": f"Api-Key {key}", "Content-Type": "application/x-ndjson"},
        )
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def outcomes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    rows = conn.execute("SELECT outcome, count(*) FROM chats_ingestionreceipt GROUP BY outcome").fetchall()
    return {outcome: count for outcome, count in rows}


def kill_mid_chunk(database: Database, worker: Worker, conn: psycopg.Connection[Any]) -> dict[str, int]:
    """SIGKILL the worker once a chunk has committed while it writes another (its session in a transaction);
    wait until its session is gone. The receipts' outcomes at the kill."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert worker.process.poll() is None, "the worker died by itself"
        done = scalar(conn, "SELECT count(*) FROM chats_ingestionreceipt WHERE outcome <> 'queued'")
        assert done < DOCUMENT_COUNT, "the task finished before it could be interrupted"
        sessions = database_client_ports(worker.pid, database.port)
        writing = sessions and scalar(
            conn,
            "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s) AND xact_start IS NOT NULL "
            "AND now() - xact_start > interval '200 milliseconds'",
            [sessions],
        )
        if done >= QUEUED_CHUNK and writing:
            worker.kill()
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the worker never got to write a second chunk")
    while scalar(conn, "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)", [sessions]):
        assert time.monotonic() < deadline, "the killed worker's database session did not end"
        time.sleep(0.05)
    return outcomes(conn)


def wait_until_redeliverable(broker: redis.Redis) -> None:
    """Wait until the unacknowledged message was delivered more than the visibility timeout ago (kombu's Redis
    transport scores each delivery by its time in the sorted set `unacked_index`)."""
    deadline = time.monotonic() + VISIBILITY_TIMEOUT + 30
    while time.monotonic() < deadline:
        delivered = cast(list[tuple[bytes, float]], broker.zrange("unacked_index", 0, -1, withscores=True))
        assert len(delivered) == 1, delivered
        if time.time() - delivered[0][1] > VISIBILITY_TIMEOUT + 0.5:
            return
        time.sleep(0.1)
    raise AssertionError("the message never became due for redelivery")


def test_a_worker_killed_mid_task_leaves_every_document_stored_exactly_once_after_redelivery(
    stack: tuple[Database, Server, str, dict[str, str]], broker: redis.Redis
) -> None:
    database, server, key, env = stack
    docs = documents(DOCUMENT_COUNT, seed=23)
    expected = {external_id(document): message_count(document) for document in docs}
    assert len(expected) == DOCUMENT_COUNT
    [body] = ndjson_bodies(docs, per_body=DOCUMENT_COUNT)

    first = Worker(env, "first")
    second = None
    try:
        started = time.monotonic()
        status, answer = post_async(server.port, key, body)
        answered = time.monotonic() - started
        assert status == 202, answer
        assert answer["summary"]["queued"] == DOCUMENT_COUNT

        with database.connect() as conn:
            at_kill = kill_mid_chunk(database, first, conn)
            killed = time.monotonic()
            # Whole chunks only: what committed is final, receipts and conversations alike; the rest waits.
            assert at_kill["created"] % QUEUED_CHUNK == 0 and 0 < at_kill["created"] < DOCUMENT_COUNT
            assert at_kill["queued"] == DOCUMENT_COUNT - at_kill["created"]
            assert scalar(conn, "SELECT count(*) FROM chats_conversation") == at_kill["created"]
            # The message was delivered and never acknowledged: Redis keeps it until the visibility timeout.
            assert broker.hlen("unacked") == 1

            wait_until_redeliverable(broker)  # the next worker to start then puts the message back
            second = Worker(env, "second")
            deadline = time.monotonic() + 180
            while outcomes(conn).get("queued", 0):
                assert time.monotonic() < deadline, f"receipts still queued: {outcomes(conn)}"
                assert second.process.poll() is None, "the second worker died"
                time.sleep(0.2)

            finished = time.monotonic()
            assert outcomes(conn) == {"created": DOCUMENT_COUNT}
            stored = dict(
                conn.execute(
                    "SELECT c.external_id, count(m.id) FROM chats_conversation c "
                    "LEFT JOIN chats_message m ON m.conversation_id = c.id GROUP BY c.id"
                ).fetchall()
            )
            assert stored == expected  # each document once, whole
            # One receipt per document, each naming its own conversation, and one event per conversation.
            assert scalar(conn, "SELECT count(DISTINCT conversation_id) FROM chats_ingestionreceipt") == DOCUMENT_COUNT
            assert sorted(item["receipt"] for item in answer["results"]) == sorted(
                str(uuid) for (uuid,) in conn.execute("SELECT uuid FROM chats_ingestionreceipt").fetchall()
            )
            events = "SELECT count(*) FROM chats_auditevent WHERE action = 'conversation.created'"
            assert scalar(conn, events) == DOCUMENT_COUNT
        # The second worker acknowledged the task once it had finished it.
        deadline = time.monotonic() + 30
        while broker.hlen("unacked") or broker.llen("celery"):
            assert time.monotonic() < deadline, "the task was not acknowledged"
            time.sleep(0.2)
        report = {
            "documents": DOCUMENT_COUNT,
            "messages": sum(expected.values()),
            "body_bytes": len(body),
            "answer_202_seconds": round(answered, 2),
            "killed_after_seconds": round(killed - started, 2),
            "applied_at_kill": at_kill["created"],
            "finished_after_kill_seconds": round(finished - killed, 2),
        }
        print(json.dumps(report))
    finally:
        first.stop()
        if second is not None:
            second.stop()
