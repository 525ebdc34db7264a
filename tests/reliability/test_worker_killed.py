"""A worker killed in the middle of a bulk ingest: nothing is ever half-stored, and the replay finishes the job.

The real server (gunicorn, two sync workers) serves a database of its own, created and migrated here. A large
bulk request is sent, and the worker serving it is killed with SIGKILL while it writes; gunicorn starts a new
worker, and the same request is sent again. Meanwhile a separate connection reads every conversation's messages
again and again.

A bulk request writes in two phases (chats.services.bulk_writer), and each gets its kill:

- the set-based batch, one transaction for every document it takes: killed with the transaction open, nothing of
  it is visible, before or after; the replay creates every conversation;
- the per-conversation phase after it (here: documents that extend a conversation another document of the same
  request already took, one transaction each): what committed before the kill stays, whole; the replay says
  "unchanged" for it and "updated" for the rest.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from bench.server import Database, Server, database_client_ports
from bench.workload import documents, ndjson_bodies
from chats import ingest
from chats.ingest import identity
from tests.reliability import base_url

pytestmark = pytest.mark.postgres

NEW_DOCUMENTS = 400  # about 8,000 messages and 15 MB: the batch takes seconds on a shared machine
MORE_DOCUMENTS = 40  # new documents sent along with the extensions
KILL_AFTER_UPDATES = 10  # phase 2 is killed once this many extensions have committed


@pytest.fixture
def served() -> Iterator[tuple[Database, Server, str]]:
    database = Database(base_url(), f"mb_faults_{os.getpid()}")
    server = None
    try:
        key = database.create_source("faults")
        server = Server(database.env, workers=2)
        yield database, server, key
    finally:
        if server:
            server.stop()
        database.drop()


def external_id(document: Any) -> str:
    """The conversation a document names, worked out as the service does (its content when it names none)."""
    parsed = ingest.parse_document(document)
    if parsed.external_id:
        return str(parsed.external_id)
    identity.assign_content_keys(parsed)
    return identity.generated_external_id(parsed)


def message_count(document: Any) -> int:
    return len(ingest.parse_document(document).messages)


def extended(document: Any) -> Any | None:
    """The document one exchange later (the same conversation, two more messages), for the formats with a list."""
    if not isinstance(document, dict):
        return None
    later = copy.deepcopy(document)
    exchange = [
        {"role": "user", "content": "One more question: how many replicates do I need?"},
        {"role": "assistant", "content": "Three biological replicates, each measured in technical triplicate."},
    ]
    if isinstance(later.get("chat_history"), list):
        later["chat_history"].extend(exchange)
    elif isinstance(later.get("main_messages"), list):
        later["main_messages"].extend(exchange)
        if isinstance(later.get("human_feedback"), list):
            later["human_feedback"].extend([{"score": 0, "additional": ""}, {"score": 1, "additional": "clear"}])
    else:
        return None
    return later


class Watcher(threading.Thread):
    """Reads every conversation's messages from its own connection until stopped, and keeps what is wrong.

    ``allowed`` maps each external id to the message counts of its documents: any other count is a partial
    conversation. Each read is one statement, so it sees one committed state of the database.
    """

    def __init__(self, database: Database, allowed: dict[str, set[int]]):
        super().__init__(daemon=True)
        self.database = database
        self.allowed = allowed
        self.stopping = threading.Event()
        self.reads = 0
        self.most_seen = 0
        self.problems: list[str] = []

    def run(self) -> None:
        with self.database.connect() as conn:
            while not self.stopping.is_set():
                rows = conn.execute(
                    """
                    SELECT c.external_id, c.message_count, count(m.id), count(DISTINCT m.key)
                    FROM chats_conversation c LEFT JOIN chats_message m ON m.conversation_id = c.id
                    GROUP BY c.id
                    """
                ).fetchall()
                self.reads += 1
                self.most_seen = max(self.most_seen, len(rows))
                for ext_id, counted, stored, keys in rows:
                    if stored not in self.allowed.get(ext_id, set()) or counted != stored or keys != stored:
                        self.problems.append(f"{ext_id}: {stored} messages ({keys} keys, message_count {counted})")
                time.sleep(0.05)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=60)


class BulkRequest(threading.Thread):
    """One bulk POST on a connection of its own, whose client port is known before it is sent."""

    def __init__(self, port: int, key: str, body: bytes):
        super().__init__(daemon=True)
        self.body = body
        self.key = key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.conn.connect()
        assert self.conn.sock is not None
        self.client_port: int = self.conn.sock.getsockname()[1]
        self.status: int | None = None
        self.payload: dict[str, Any] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.conn.request(
                "POST",
                "/api/v1/ingest/bulk/",
                body=self.body,
                headers={"Authorization": f"Api-Key {self.key}", "Content-Type": "application/x-ndjson"},
            )
            response = self.conn.getresponse()
            self.status = response.status
            self.payload = json.loads(response.read())
        except (OSError, http.client.HTTPException) as error:
            self.error = error
        finally:
            self.conn.close()


def send(port: int, key: str, body: bytes) -> tuple[int | None, dict[str, Any]]:
    request = BulkRequest(port, key, body)
    request.run()
    assert request.error is None, request.error
    return request.status, request.payload


def kill_serving_worker(
    server: Server, database: Database, request: BulkRequest, ready: Callable[[psycopg.Connection[Any], int], bool]
) -> int:
    """SIGKILL the worker serving ``request`` as soon as ``ready`` says so; wait until its database session is gone
    and gunicorn has started another worker."""
    deadline = time.monotonic() + 300
    worker = None
    with database.connect() as conn:
        while time.monotonic() < deadline and request.is_alive():
            worker = worker or server.worker_serving(request.client_port)
            if worker is not None and ready(conn, worker):
                sessions = database_client_ports(worker, database.port)
                os.kill(worker, signal.SIGKILL)
                break
            time.sleep(0.01)
        else:
            raise AssertionError(f"the request ended before it could be interrupted: {request.status}")
        request.join(timeout=60)
        while conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)", [sessions]
        ).fetchone() != (0,):
            assert time.monotonic() < deadline, "the killed worker's database session did not end"
            time.sleep(0.05)
    server.wait_for_workers(without=worker)
    return worker


def scalar(conn: psycopg.Connection[Any], sql: str, params: list[Any] | None = None) -> Any:
    row = conn.execute(sql, params or []).fetchone()
    assert row is not None
    return row[0]


def outcomes_of_receipts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return dict(conn.execute("SELECT outcome, count(*) FROM chats_ingestionreceipt GROUP BY outcome").fetchall())


def get_receipt(port: int, key: str, receipt: str) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/api/v1/receipts/{receipt}/", headers={"Authorization": f"Api-Key {key}"})
    response = conn.getresponse()
    assert response.status == 200
    payload: dict[str, Any] = json.loads(response.read())
    conn.close()
    return payload


def test_a_worker_killed_mid_bulk_leaves_whole_conversations_and_the_replay_completes(served):
    database, server, key = served
    docs = documents(NEW_DOCUMENTS, seed=41)
    ids = [external_id(d) for d in docs]
    assert len(set(ids)) == NEW_DOCUMENTS
    allowed = {ext_id: {message_count(d)} for ext_id, d in zip(ids, docs, strict=True)}
    (body,) = ndjson_bodies(docs, per_body=NEW_DOCUMENTS)
    watcher = Watcher(database, allowed)
    watcher.start()
    report: dict[str, Any] = {}
    started = time.monotonic()
    try:
        with database.connect() as conn:
            # ---- 1. Killed inside the set-based batch: a write transaction open, message ids taken, nothing
            # committed.
            message_ids_before = scalar(conn, "SELECT last_value FROM chats_message_id_seq")
            request = BulkRequest(server.port, key, body)
            request.start()
            at_kill: dict[str, Any] = {}

            def batch_is_writing(watch: psycopg.Connection[Any], worker: int) -> bool:
                ports = database_client_ports(worker, database.port)
                writing = scalar(
                    watch,
                    "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s) AND backend_xid IS NOT NULL",
                    [ports],
                )
                taken = scalar(watch, "SELECT last_value FROM chats_message_id_seq") - message_ids_before
                stored = scalar(watch, "SELECT count(*) FROM chats_conversation")
                at_kill.update(writing=writing, message_ids_taken=taken, conversations=stored)
                return bool(writing and taken > 0 and stored == 0)

            kill_serving_worker(server, database, request, batch_is_writing)
            assert request.status is None and request.error is not None  # no response, not even a status line
            assert at_kill["conversations"] == 0 and at_kill["message_ids_taken"] > 0
            # The batch had written messages (their ids are taken) and none of them is visible: rolled back whole.
            assert scalar(conn, "SELECT count(*) FROM chats_conversation") == 0
            assert scalar(conn, "SELECT count(*) FROM chats_message") == 0
            assert outcomes_of_receipts(conn) == {}
            report["1: killed in the batch"] = {**at_kill, "stored before the kill": 0}

            status, payload = send(server.port, key, body)
            assert status == 200
            assert payload["summary"] == {
                "queued": 0,
                "created": NEW_DOCUMENTS,
                "updated": 0,
                "unchanged": 0,
                "rejected": 0,
            }
            assert [r["external_id"] for r in payload["results"]] == ids
            stored = dict(
                conn.execute(
                    "SELECT c.external_id, count(m.id) FROM chats_conversation c "
                    "JOIN chats_message m ON m.conversation_id = c.id GROUP BY c.id"
                ).fetchall()
            )
            assert stored == {ext_id: message_count(d) for ext_id, d in zip(ids, docs, strict=True)}
            assert outcomes_of_receipts(conn) == {"created": NEW_DOCUMENTS}
            created_receipt = get_receipt(server.port, key, payload["results"][0]["receipt"])
            assert created_receipt["outcome"] == "created"
            assert created_receipt["messages_added"] == message_count(docs[0])
            report["1: replay"] = payload["summary"]

            # ---- 2. Killed in the per-conversation phase: stored documents sent again and new ones (the batch,
            # committed first), and extensions of the conversations the batch took (one transaction each, after).
            more = documents(MORE_DOCUMENTS, seed=42, first_index=1_000_000)
            more_ids = [external_id(d) for d in more]
            extensions = [(ext_id, later) for ext_id, d in zip(ids, docs, strict=True) if (later := extended(d))]
            assert len(extensions) >= NEW_DOCUMENTS // 2
            for ext_id, later in extensions:
                assert external_id(later) == ext_id
                allowed[ext_id].add(message_count(later))
            for ext_id, d in zip(more_ids, more, strict=True):
                allowed[ext_id] = {message_count(d)}
            originals = [d for ext_id, d in zip(ids, docs, strict=True) if ext_id in dict(extensions)]
            second = originals + [later for _, later in extensions] + more
            (body2,) = ndjson_bodies(second, per_body=len(second))
            request = BulkRequest(server.port, key, body2)
            request.start()

            def some_extensions_committed(watch: psycopg.Connection[Any], worker: int) -> bool:
                updated = scalar(watch, "SELECT count(*) FROM chats_ingestionreceipt WHERE outcome = 'updated'")
                at_kill.clear()
                at_kill.update(updated=updated)
                return bool(updated >= KILL_AFTER_UPDATES)

            kill_serving_worker(server, database, request, some_extensions_committed)
            assert request.status is None and request.error is not None
            assert at_kill["updated"] < len(extensions)  # the request was not finished
            receipts = outcomes_of_receipts(conn)
            updated_before = {
                row[0]
                for row in conn.execute(
                    "SELECT external_id FROM chats_ingestionreceipt WHERE outcome = 'updated'"
                ).fetchall()
            }
            assert receipts == {
                "created": NEW_DOCUMENTS + MORE_DOCUMENTS,
                "unchanged": len(originals),
                "updated": len(updated_before),
            }
            assert len(updated_before) < len(extensions)
            report["2: killed in the per-conversation phase"] = {
                "extensions": len(extensions),
                "new": MORE_DOCUMENTS,
                "stored before the kill": MORE_DOCUMENTS + len(updated_before),
                "updated at the kill": at_kill["updated"],
            }

            status, payload = send(server.port, key, body2)
            assert status == 200
            expected = (
                ["unchanged"] * len(originals)
                + ["unchanged" if ext_id in updated_before else "updated" for ext_id, _ in extensions]
                + ["unchanged"] * MORE_DOCUMENTS
            )
            assert [r["outcome"] for r in payload["results"]] == expected
            assert [r["external_id"] for r in payload["results"]] == [e for e, _ in extensions] * 2 + more_ids
            report["2: replay"] = payload["summary"]
            by_outcome = {r["outcome"]: r["receipt"] for r in payload["results"]}
            assert get_receipt(server.port, key, by_outcome["unchanged"])["outcome"] == "unchanged"
            updated_receipt = get_receipt(server.port, key, by_outcome["updated"])
            assert updated_receipt["outcome"] == "updated" and updated_receipt["messages_added"] == 2

            # Nothing duplicated, every conversation as its latest document says.
            total = NEW_DOCUMENTS + MORE_DOCUMENTS
            assert scalar(conn, "SELECT count(*) FROM chats_conversation") == total
            assert scalar(conn, "SELECT count(DISTINCT (source_id, external_id)) FROM chats_conversation") == total
            latest = {ext_id: message_count(d) for ext_id, d in zip(ids, docs, strict=True)}
            latest |= {ext_id: message_count(later) for ext_id, later in extensions}
            latest |= {ext_id: message_count(d) for ext_id, d in zip(more_ids, more, strict=True)}
            stored = dict(
                conn.execute(
                    "SELECT c.external_id, count(m.id) FROM chats_conversation c "
                    "JOIN chats_message m ON m.conversation_id = c.id GROUP BY c.id"
                ).fetchall()
            )
            assert stored == latest
            assert outcomes_of_receipts(conn) == {
                "created": total,
                "updated": len(extensions),
                "unchanged": 2 * len(originals) + len(updated_before) + MORE_DOCUMENTS,
            }
    finally:
        watcher.stop()
    assert watcher.reads > 10
    assert watcher.problems == []
    report["watcher"] = {"reads": watcher.reads, "problems": 0}
    report["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report))
