"""Load: concurrent ingest clients against the real server, then a check that nothing was duplicated or half-stored.

    python bench/load.py [--duration 60] [--clients 8] [--workers N] [--database-url postgres://...] [--json]

It creates its own database (``mb_load_<pid>`` on the server of --database-url, dropped at the end), migrates it,
serves it with gunicorn on 127.0.0.1 (as many sync workers as cores, the ingest throttle lifted), and runs
``--clients`` client processes for ``--duration`` seconds. Each client loops over single-document and small bulk
requests (JSON arrays and NDJSON) of:

- new conversations of its own (in every input format),
- versions of conversations shared by all clients: each grows by prefixes (a third, two thirds, all of its
  messages), and every client sends any version at any time, so the same conversation is created, extended and
  replayed by several clients at once,
- replays of its own conversations, which must say "unchanged".

It prints requests, documents, errors (a non-2xx answer or a connection error), unexpected outcomes, p50/p95
latency and throughput, then checks the database: no duplicate conversation or message key, each conversation's
messages exactly those of the longest document acknowledged for it (nothing is deleted, so a shorter version
adds nothing) and its summary count in agreement, its active path one whole path from the root to the leaf a
document chose (the longest one's last message for the formats that name no leaf; for those that do, such as
chat_graph's latest leaf, the leaf of whichever acknowledged version the server stored last), and a receipt for
every document sent. The exit status is non-zero on any error, unexpected outcome or failed check. Nothing
leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import DEFAULT_BASE_URL, Database, Server  # noqa: E402
from chats import ingest  # noqa: E402
from chats.demo.generator import generate  # noqa: E402
from chats.ingest import identity  # noqa: E402

SHARED_CONVERSATIONS = 48
# Lighter than the benchmark's documents: the clients share the machine's cores with the server.
DOCUMENT_SHAPE: dict[str, Any] = {"turns": (2, 5), "result_size": (300, 1500), "injection_size": (1000, 4000)}
MAX_ERRORS_SHOWN = 10


@dataclass(frozen=True)
class Version:
    document: Any
    body: bytes
    messages: int
    leaf: str
    names_leaf: bool  # the document chooses its active leaf (chat_graph, chatgpt_export): a resend moves it back


@dataclass(frozen=True)
class Item:
    """One document a client sends: new, a version of a shared conversation, or a replay of its own."""

    kind: str
    document: Any
    body: bytes
    shared: int = -1  # the shared conversation and the version of it
    version: int = -1


@dataclass(frozen=True)
class Shared:
    external_id: str
    versions: list[Version]  # each a prefix of the next


def external_id(document: Any) -> str:
    """The conversation a document names, worked out as the service does (its content when it names none)."""
    parsed = ingest.parse_document(document)
    if parsed.external_id:
        return str(parsed.external_id)
    # A chat of its own (no stored id-less chat is a prefix of it): named by its last message's content key.
    identity.assign_content_keys(parsed)
    return identity.generated_external_id(parsed)


def expected(document: Any) -> tuple[int, str, bool]:
    """How many messages the document stores, the leaf it makes active, and whether it names that leaf."""
    parsed = ingest.parse_document(document)
    return len(parsed.messages), parsed.active_leaf_key or parsed.messages[-1].key, bool(parsed.active_leaf_key)


def encode(document: Any) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def prefix(document: Any, fraction: float) -> Any | None:
    """The document with the first ``fraction`` of its message list, for the formats that keep one list."""
    if not isinstance(document, dict):
        return None  # an OpenAI list names no conversation: a prefix would be another one
    for name in ("chat_history", "main_messages", "nodes"):
        if isinstance(document.get(name), list):
            keep = max(int(len(document[name]) * fraction), 1)
            shorter = dict(document, **{name: document[name][:keep]})
            if isinstance(document.get("human_feedback"), list):
                shorter["human_feedback"] = document["human_feedback"][:keep]
            return shorter
    return None


def shared_conversations(seed: int) -> list[Shared]:
    out = []
    for _, document in generate(SHARED_CONVERSATIONS, seed=seed, **DOCUMENT_SHAPE):
        documents = [d for fraction in (1 / 3, 2 / 3) if (d := prefix(document, fraction)) is not None]
        versions: list[Version] = []
        for d in [*documents, document]:
            messages, leaf, names_leaf = expected(d)
            if not versions or messages > versions[-1].messages:
                versions.append(Version(d, encode(d), messages, leaf, names_leaf))
        out.append(Shared(external_id(document), versions))
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)]


# --------------------------------------------------------------------------------------------------------------
# A client (a forked process: the shared conversations are inherited)

_SHARED: list[Shared] = []
_RUN: dict[str, Any] = {}


class Client:
    def __init__(self, number: int):
        self.number = number
        self.rng = random.Random(_RUN["seed"] * 1000 + number)
        self.new_documents = (
            document
            for _, document in generate(
                10**6, seed=_RUN["seed"] * 1000 + number, first_index=(number + 1) * 1_000_000, **DOCUMENT_SHAPE
            )
        )
        self.latencies: dict[str, list[float]] = {"single": [], "bulk": []}
        self.documents = 0
        self.errors: list[str] = []
        self.unexpected: list[str] = []
        self.outcomes: Counter[str] = Counter()
        self.mine: list[tuple[str, Any, bytes]] = []  # (external id answered, document, body): acknowledged
        self.shared_acknowledged: dict[int, set[int]] = {}  # shared conversation -> versions acknowledged

    def post(self, kind: str, path: str, body: bytes, content_type: str) -> tuple[int, Any]:
        """The status and decoded answer of a 2xx, else (0, None): the failure counted."""
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", _RUN["port"], timeout=120)
        try:
            conn.request(
                "POST",
                path,
                body=body,
                headers={"Authorization": f"Api-Key {_RUN['key']}", "Content-Type": content_type},
            )
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.errors.append(f"{path}: {type(error).__name__}: {error}")
            return 0, None
        finally:
            conn.close()
        self.latencies[kind].append(time.perf_counter() - started)
        if not 200 <= response.status < 300:
            self.errors.append(f"{path}: {response.status} {data[:300]!r}")
            return 0, None
        return response.status, json.loads(data)

    def pick(self) -> Item:
        roll = self.rng.random()
        if roll < 0.2 and self.mine:
            _, document, body = self.rng.choice(self.mine)
            return Item("replay", document, body)
        if roll < 0.6:
            shared = self.rng.randrange(len(_SHARED))
            version = self.rng.randrange(len(_SHARED[shared].versions))
            chosen = _SHARED[shared].versions[version]
            return Item("shared", chosen.document, chosen.body, shared, version)
        document = next(self.new_documents)
        return Item("new", document, encode(document))

    def check(self, item: Item, result: Any, status: int | None = None) -> None:
        """Count the outcome; keep what was acknowledged; note an outcome (or status) the item cannot have."""
        outcome = result.get("outcome")
        self.outcomes[outcome] += 1
        wanted = {"new": {"created"}, "replay": {"unchanged"}, "shared": {"created", "updated", "unchanged"}}
        if outcome not in wanted[item.kind] or (
            status is not None and status != (201 if outcome == "created" else 200)
        ):
            self.unexpected.append(f"{item.kind} {status or 'in bulk'}: {json.dumps(result)[:300]}")
        elif item.kind == "new":
            self.mine.append((result["external_id"], item.document, item.body))
        elif item.kind == "shared":
            self.shared_acknowledged.setdefault(item.shared, set()).add(item.version)

    def single(self) -> None:
        item = self.pick()
        self.documents += 1
        status, answer = self.post("single", "/api/v1/ingest/", item.body, "application/json")
        if answer is not None:
            self.check(item, answer, status)

    def bulk(self) -> None:
        items = [self.pick() for _ in range(self.rng.randint(2, 8))]
        self.documents += len(items)
        if self.rng.random() < 0.5:
            body = b"[" + b",".join(item.body for item in items) + b"]"
            _, answer = self.post("bulk", "/api/v1/ingest/bulk/", body, "application/json")
        else:
            body = b"\n".join(item.body for item in items)
            _, answer = self.post("bulk", "/api/v1/ingest/bulk/", body, "application/x-ndjson")
        if answer is None:
            return
        results = answer.get("results", [])
        if len(results) != len(items):
            self.unexpected.append(f"bulk: {len(results)} results for {len(items)} documents")
            return
        for item, result in zip(items, results, strict=True):
            self.check(item, result)

    def run(self, start: float, deadline: float) -> dict[str, Any]:
        while time.monotonic() < start:
            time.sleep(0.01)
        while time.monotonic() < deadline:
            if self.rng.random() < 0.6:
                self.single()
            else:
                self.bulk()
        ended = time.monotonic()
        conversations = {}
        for answered, document, _ in self.mine:
            if external_id(document) != answered:
                self.unexpected.append(f"answered external id {answered}, the document names {external_id(document)}")
            messages, leaf, _ = expected(document)
            conversations[answered] = (messages, {leaf})
        return {
            "ended": ended,
            "latencies": self.latencies,
            "documents": self.documents,
            "errors": self.errors,
            "unexpected": self.unexpected,
            "outcomes": dict(self.outcomes),
            "conversations": conversations,
            "shared": self.shared_acknowledged,
        }


def _client(task: tuple[int, float, float]) -> dict[str, Any]:
    number, start, deadline = task
    return Client(number).run(start, deadline)


def run_clients(port: int, key: str, *, clients: int, duration: float, seed: int) -> tuple[list[dict[str, Any]], float]:
    """Every client's results, and the seconds from the common start to the last answer."""
    _RUN.update(port=port, key=key, seed=seed)
    context = multiprocessing.get_context("fork")
    with context.Pool(clients) as pool:
        start = time.monotonic() + 0.5  # CLOCK_MONOTONIC: one clock for every process of the machine
        tasks = [(number, start, start + duration) for number in range(clients)]
        results = pool.map(_client, tasks, chunksize=1)
    return results, max(r["ended"] for r in results) - start


# --------------------------------------------------------------------------------------------------------------
# The check


def verify(
    database: Database, expected_rows: dict[str, tuple[int, set[str]]], documents: int
) -> tuple[list[str], str, int]:
    """Problems found in the database (none expected), a one-line description of what was checked, and the number
    of messages stored."""
    problems = []
    with database.connect() as conn:
        duplicates = conn.execute(
            "SELECT source_id, external_id, count(*) FROM chats_conversation "
            "GROUP BY source_id, external_id HAVING count(*) > 1"
        ).fetchall()
        problems += [f"conversation {row[1]} stored {row[2]} times" for row in duplicates]
        keys = conn.execute(
            "SELECT conversation_id, key, count(*) FROM chats_message GROUP BY conversation_id, key HAVING count(*) > 1"
        ).fetchall()
        problems += [f"message key {row[1]} stored {row[2]} times in conversation {row[0]}" for row in keys]
        stored = {
            ext_id: (counted, leaf, rows, on_path, leaf_depth)
            for ext_id, counted, leaf, rows, on_path, leaf_depth in conn.execute(
                """
                SELECT c.external_id, c.message_count, c.active_leaf_key, count(m.id),
                       count(m.id) FILTER (WHERE m.on_active_path),
                       max(m.depth) FILTER (WHERE m.key = c.active_leaf_key AND m.on_active_path)
                FROM chats_conversation c LEFT JOIN chats_message m ON m.conversation_id = c.id GROUP BY c.id
                """
            ).fetchall()
        }
        receipts_row = conn.execute("SELECT count(*) FROM chats_ingestionreceipt").fetchone()
        messages_row = conn.execute("SELECT count(*) FROM chats_message").fetchone()
    receipts = receipts_row[0] if receipts_row else 0
    for ext_id in sorted(set(stored) - set(expected_rows)):
        problems.append(f"conversation {ext_id} is stored, but no answer acknowledged it")
    for ext_id, (messages, leaves) in sorted(expected_rows.items()):
        if ext_id not in stored:
            problems.append(f"conversation {ext_id} was acknowledged, but is not stored")
            continue
        counted, active, rows, on_path, leaf_depth = stored[ext_id]
        if rows != messages or counted != messages:
            problems.append(f"conversation {ext_id}: {rows} messages (summary {counted}), its document has {messages}")
        if active not in leaves:
            problems.append(f"conversation {ext_id}: active leaf {active}, which no document chose ({leaves})")
        if leaf_depth is None or on_path != leaf_depth + 1:
            problems.append(f"conversation {ext_id}: {on_path} messages on the active path to {active}")
    if receipts != documents:
        problems.append(f"{receipts} receipts for {documents} documents sent")
    messages = messages_row[0] if messages_row else 0
    return problems, f"{len(stored):,} conversations, {messages:,} messages, {receipts:,} receipts", messages


# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadRun:
    """What a load run measured and found: its figures, and every error, unexpected outcome and problem."""

    figures: dict[str, Any]
    errors: list[str]
    unexpected: list[str]
    problems: list[str]
    checked: str

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.unexpected or self.problems)


def load_run(database: Database, port: int, key: str, *, clients: int, duration: float, seed: int) -> LoadRun:
    """``clients`` clients for ``duration`` seconds against 127.0.0.1:``port`` (a server of ``database``), then the
    check of what ``database`` stored. The database must be new: the check reads all of it."""
    _SHARED[:] = shared_conversations(seed)
    results, elapsed = run_clients(port, key, clients=clients, duration=duration, seed=seed)
    singles = [t for r in results for t in r["latencies"]["single"]]
    bulks = [t for r in results for t in r["latencies"]["bulk"]]
    every = singles + bulks
    errors = [e for r in results for e in r["errors"]]
    unexpected = [u for r in results for u in r["unexpected"]]
    requests = len(every) + len(errors)
    documents = sum(r["documents"] for r in results)
    outcomes: Counter[str] = Counter()
    for r in results:
        outcomes.update(r["outcomes"])

    expected_rows: dict[str, tuple[int, set[str]]] = {}
    for r in results:
        expected_rows.update(r["conversations"])
    acknowledged: dict[int, set[int]] = {}
    for r in results:
        for shared, versions in r["shared"].items():
            acknowledged.setdefault(shared, set()).update(versions)
    for shared, versions in acknowledged.items():
        sent = [_SHARED[shared].versions[v] for v in sorted(versions)]
        leaves = {v.leaf for v in sent} if sent[-1].names_leaf else {sent[-1].leaf}
        expected_rows[_SHARED[shared].external_id] = (sent[-1].messages, leaves)
    problems, checked, messages = verify(database, expected_rows, documents)
    figures = {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": requests,
        "single_requests": len(singles),
        "bulk_requests": len(bulks),
        "documents": documents,
        "messages": messages,
        "outcomes": dict(outcomes),
        "errors": len(errors),
        "unexpected": len(unexpected),
        "p50_ms": round(pct(every, 0.5) * 1000, 1),
        "p95_ms": round(pct(every, 0.95) * 1000, 1),
        "single_p50_ms": round(pct(singles, 0.5) * 1000, 1),
        "single_p95_ms": round(pct(singles, 0.95) * 1000, 1),
        "bulk_p50_ms": round(pct(bulks, 0.5) * 1000, 1),
        "bulk_p95_ms": round(pct(bulks, 0.95) * 1000, 1),
        "requests_per_s": round(requests / elapsed, 1),
        "documents_per_s": round(documents / elapsed, 1),
        "messages_per_s": round(messages / elapsed, 1),
        "shared_conversations": len(acknowledged),
        "problems": len(problems),
    }
    return LoadRun(figures, errors, unexpected, problems, checked)


def print_run(run: LoadRun) -> None:
    """The figures and findings of ``run``, a line each."""
    figures = run.figures
    outcomes = figures["outcomes"]
    print(
        f"requests    {figures['requests']:,} ({figures['single_requests']:,} single, "
        f"{figures['bulk_requests']:,} bulk)"
    )
    print(
        f"documents   {figures['documents']:,}: " + ", ".join(f"{name} {n:,}" for name, n in sorted(outcomes.items()))
    )
    print(f"errors      {len(run.errors)} (non-2xx or connection), unexpected outcomes {len(run.unexpected)}")
    for line in (run.errors + run.unexpected)[:MAX_ERRORS_SHOWN]:
        print(f"  {line}")
    print(
        f"latency     p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms "
        f"(single p50 {figures['single_p50_ms']} / p95 {figures['single_p95_ms']} ms, "
        f"bulk p50 {figures['bulk_p50_ms']} / p95 {figures['bulk_p95_ms']} ms)"
    )
    print(
        f"throughput  {figures['requests_per_s']} requests/s, {figures['documents_per_s']} documents/s, "
        f"{figures['messages_per_s']} new messages/s"
    )
    print(f"checked     {run.checked}, {figures['shared_conversations']} of them shared by every client")
    print(f"problems    {len(run.problems)}" + ("" if run.problems else ": no duplicate, every conversation whole"))
    for line in run.problems[:MAX_ERRORS_SHOWN]:
        print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client processes (default 8)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="gunicorn workers (default: cores)")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL), help="the server to use"
    )
    parser.add_argument("--database-name", default=f"mb_load_{os.getpid()}", help="created, and dropped at the end")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line, last")
    args = parser.parse_args()

    database = Database(args.database_url, args.database_name)
    server = None
    try:
        key = database.create_source("load")
        server = Server(database.env, args.workers)
        run = load_run(database, server.port, key, clients=args.clients, duration=args.duration, seed=args.seed)
    finally:
        if server:
            server.stop()
        database.drop()

    figures = {**run.figures, "workers": args.workers}
    print(f"load: {args.clients} clients for {figures['seconds']:.1f} s against {args.workers} gunicorn workers (sync)")
    print_run(run)
    if args.json:
        print(json.dumps(figures))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
