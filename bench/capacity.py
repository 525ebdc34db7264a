"""The capacity of one node: ingest and read throughput against the real server, and where the CPU goes.

    python bench/capacity.py [--seconds 20] [--clients 4] [--workers N] [--database-url postgres://...] [--json]

It creates its own database (dropped at the end), serves it with gunicorn on 127.0.0.1 (as many sync workers as
cores, the ingest throttle lifted), and runs two phases of ``--seconds`` each, with ``--clients`` client processes:

- ingest: the load run's clients (bench/load.py: single documents and small bulks, new, growing and replayed
  conversations);
- reads: a reviewer's API token reads the conversation list (50 a page) and conversations' details in turn.

For each phase it prints the throughput, latency, and the CPU seconds spent by the gunicorn workers, by the
PostgreSQL backends serving them, and by the clients, as shares of the machine's cores over the phase: what
saturates first is what nears its share of the cores. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from bench.server import DEFAULT_BASE_URL, Database, Server  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


class CpuWatch:
    """CPU seconds of the gunicorn workers and of this database's backends, sampled every 0.2 s so that a process
    that ends during the phase still counts."""

    def __init__(self, server: Server, database: Database):
        self.server, self.database = server, database
        self.last: dict[str, dict[int, float]] = {"app": {}, "db": {}}
        self.first: dict[str, dict[int, float]] = {"app": {}, "db": {}}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self) -> dict[str, list[int]]:
        with self.database.connect() as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        return {"app": [self.server.process.pid, *self.server.workers()], "db": [pid for (pid,) in rows]}

    def _sample(self) -> None:
        for kind, pids in self._pids().items():
            for pid in pids:
                seconds = cpu_seconds(pid)
                if seconds:
                    self.first[kind].setdefault(pid, seconds)
                    self.last[kind][pid] = seconds

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self) -> CpuWatch:
        self._sample()
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.elapsed = time.monotonic() - self.started

    def spent(self, kind: str) -> float:
        # A process first seen during the phase is counted from 0 only if it started in it (a new backend); one
        # seen at the start is counted from then.
        return sum(self.last[kind][pid] - self.first[kind].get(pid, 0.0) for pid in self.last[kind])


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / TICKS, sum(values) / TICKS


_READ: dict[str, Any] = {}


def _reader(task: tuple[int, float, float]) -> dict[str, Any]:
    number, start, deadline = task
    port, token, uuids = _READ["port"], _READ["token"], _READ["uuids"]
    headers = {"Authorization": f"Api-Key {token}"}
    latencies: list[float] = []
    errors = 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    time.sleep(max(0.0, start - time.monotonic()))
    i = number
    begun = time.process_time()
    while time.monotonic() < deadline:
        path = "/api/v1/conversations/?limit=50" if i % 2 else f"/api/v1/conversations/{uuids[i % len(uuids)]}/"
        i += 1
        sent = time.monotonic()
        try:
            conn.request("GET", path, headers=headers)
            answer = conn.getresponse()
            answer.read()
            if answer.status != 200:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        latencies.append(time.monotonic() - sent)
    return {"latencies": latencies, "errors": errors, "cpu": time.process_time() - begun}


def read_phase(port: int, token: str, uuids: list[str], *, clients: int, seconds: float) -> dict[str, Any]:
    _READ.update(port=port, token=token, uuids=uuids)
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        start = time.monotonic() + 0.5
        results = pool.map(_reader, [(n, start, start + seconds) for n in range(clients)], chunksize=1)
    latencies = [t for r in results for t in r["latencies"]]
    return {
        "requests": len(latencies),
        "errors": sum(r["errors"] for r in results),
        "p50_ms": round(load.pct(latencies, 0.5) * 1000, 1),
        "p95_ms": round(load.pct(latencies, 0.95) * 1000, 1),
        "clients_cpu": sum(r["cpu"] for r in results),
    }


def shares(watch: CpuWatch, clients_cpu: float, busy: float) -> dict[str, float]:
    """Each part's CPU as a share of the machine's cores over the phase."""
    capacity = watch.elapsed * (os.cpu_count() or 1)
    app, db = watch.spent("app"), watch.spent("db")
    return {
        "app": round(app / capacity, 2),
        "db": round(db / capacity, 2),
        "clients": round(clients_cpu / capacity, 2),
        "machine": round(busy / capacity, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of each phase (default 20)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client processes (default 4)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="gunicorn workers (default: cores)")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL), help="the server to use"
    )
    parser.add_argument("--database-name", default=f"mb_capacity_{os.getpid()}", help="created, dropped at the end")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line, last")
    args = parser.parse_args()

    load._SHARED[:] = load.shared_conversations(1)
    database = Database(args.database_url, args.database_name)
    server = None
    figures: dict[str, Any] = {"workers": args.workers, "clients": args.clients, "cores": os.cpu_count()}
    try:
        key = database.create_source("capacity")
        server = Server(database.env, args.workers)

        busy0, _ = machine_busy()
        with CpuWatch(server, database) as watch:
            results, elapsed = load.run_clients(server.port, key, clients=args.clients, duration=args.seconds, seed=1)
        busy = machine_busy()[0] - busy0
        with database.connect() as conn:
            row = conn.execute("SELECT count(*) FROM chats_message").fetchone()
        messages = row[0] if row else 0
        every = [t for r in results for kind in ("single", "bulk") for t in r["latencies"][kind]]
        figures["ingest"] = {
            "seconds": round(elapsed, 1),
            "requests": len(every),
            "errors": sum(len(r["errors"]) for r in results),
            "documents": sum(r["documents"] for r in results),
            "messages_stored": messages,
            "msgs_per_s": round(messages / elapsed),
            "p50_ms": round(load.pct(every, 0.5) * 1000, 1),
            "p95_ms": round(load.pct(every, 0.95) * 1000, 1),
            "cpu_share": shares(watch, 0.0, busy) | {"clients": None},
        }

        database.manage("shell", "-c", _MAKE_READER)
        token = database.manage("create_api_token", "capacity-reader").strip().splitlines()[-1]
        with database.connect() as conn:
            uuids = [str(u) for (u,) in conn.execute("SELECT uuid FROM chats_conversation ORDER BY id LIMIT 500")]
        busy0, _ = machine_busy()
        with CpuWatch(server, database) as watch:
            reads = read_phase(server.port, token, uuids, clients=args.clients, seconds=args.seconds)
        busy = machine_busy()[0] - busy0
        reads["reads_per_s"] = round(reads["requests"] / watch.elapsed)
        reads["cpu_share"] = shares(watch, reads.pop("clients_cpu"), busy)
        figures["reads"] = reads
    finally:
        if server:
            server.stop()
        database.drop()

    ingest, reads = figures["ingest"], figures["reads"]
    print(f"one node: {figures['cores']} cores, {args.workers} gunicorn workers, {args.clients} clients per phase")
    print(
        f"ingest  {ingest['msgs_per_s']:>7,} msgs/s  {ingest['requests']:,} requests, {ingest['errors']} errors, "
        f"p50 {ingest['p50_ms']} ms, p95 {ingest['p95_ms']} ms; CPU of the cores: app {ingest['cpu_share']['app']:.0%}, "
        f"PostgreSQL {ingest['cpu_share']['db']:.0%}, machine {ingest['cpu_share']['machine']:.0%}"
    )
    print(
        f"reads   {reads['reads_per_s']:>7,} reads/s {reads['requests']:,} requests, {reads['errors']} errors, "
        f"p50 {reads['p50_ms']} ms, p95 {reads['p95_ms']} ms; CPU of the cores: app {reads['cpu_share']['app']:.0%}, "
        f"PostgreSQL {reads['cpu_share']['db']:.0%}, clients {reads['cpu_share']['clients']:.0%}, "
        f"machine {reads['cpu_share']['machine']:.0%}"
    )
    if args.json:
        print(json.dumps(figures))
    return 1 if ingest["errors"] or reads["errors"] else 0


_MAKE_READER = (
    "from django.contrib.auth.models import Group, User; "
    "u = User.objects.create_user('capacity-reader'); u.groups.add(Group.objects.get(name='Reviewers'))"
)


if __name__ == "__main__":
    sys.exit(main())
