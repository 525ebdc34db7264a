"""A1: what the audit log's hash chain costs a write, and how long verify_audit takes.

    python bench/audit_chain.py [--database-url postgres://postgres@127.0.0.1:5432/postgres] [--events 2000]
                                [--writers 4] [--bulk 500]

It creates a database of its own on the server of --database-url (migrated to this code) and drops it at the end;
nothing leaves 127.0.0.1. Each workload writes --events events shaped like a feedback change, twice:
  plain    as the code before the chain: the event built by audit_event and inserted (Model.save, or bulk_create),
           with the chain's unique constraint dropped for the run
  chained  through audit_insert: the advisory lock, the chain's head and the ids, the hash, the insert
Workloads: one event per transaction, one after another; the same split across --writers threads at once (the lock
serializes them); batches of --bulk events per transaction (the bulk ingestion path). Then verify_audit's walk over
the chained log. Figures are wall-clock seconds on this machine, with the ratio chained / plain.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import DEFAULT_BASE_URL, Database, server_env  # noqa: E402

DB_NAME = "masterbrain_audit_chain_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=DEFAULT_BASE_URL)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--bulk", type=int, default=500)
    args = parser.parse_args()

    database = Database(args.database_url, DB_NAME)
    try:
        os.environ.update(server_env(database.url))
        run(args.events, args.writers, args.bulk)
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()


def run(events: int, writers: int, bulk: int) -> None:
    import django

    django.setup()
    from django.db import connection, connections, transaction

    from chats.audit_actions import AuditAction
    from chats.models import AuditEvent
    from chats.services.audit import CommandActor, audit_event
    from chats.services.audit_chain import audit_insert
    from chats.services.audit_verification import audit_chain_check

    actor = CommandActor("bench")

    def event(n: int) -> AuditEvent:
        return audit_event(
            actor=actor,
            action=AuditAction.FEEDBACK_UPDATED,
            target_type="feedback",
            target_id=uuid.uuid4(),
            conversation_uuid=uuid.uuid4(),
            before={"score": -1, "comment": "", "labels": ["helpful"]},
            after={"score": 1, "comment": f"change {n}", "labels": ["helpful", "correct"]},
        )

    def plain_one(n: int) -> None:
        with transaction.atomic():
            event(n).save(force_insert=True)

    def chained_one(n: int) -> None:
        with transaction.atomic():
            audit_insert([event(n)])

    def plain_bulk(numbers: range) -> None:
        with transaction.atomic():
            AuditEvent.objects.bulk_create([event(n) for n in numbers], batch_size=bulk)

    def chained_bulk(numbers: range) -> None:
        with transaction.atomic():
            audit_insert([event(n) for n in numbers])

    def empty(*, unique: bool) -> None:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE chats_auditevent")
            cursor.execute("ALTER TABLE chats_auditevent DROP CONSTRAINT IF EXISTS audit_chain_prev_unique")
            if unique:
                cursor.execute("ALTER TABLE chats_auditevent ADD CONSTRAINT audit_chain_prev_unique UNIQUE (prev_hash)")

    def one_by_one(write: Callable[[int], None]) -> float:
        started = time.perf_counter()
        for n in range(events):
            write(n)
        return time.perf_counter() - started

    def at_once(write: Callable[[int], None]) -> float:
        barrier = threading.Barrier(writers + 1)

        def writer(first: int) -> None:
            try:
                barrier.wait()
                for n in range(first, events, writers):
                    write(n)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=writer, args=(first,)) for first in range(writers)]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        return time.perf_counter() - started

    def in_batches(write: Callable[[range], None]) -> float:
        started = time.perf_counter()
        for first in range(0, events, bulk):
            write(range(first, min(first + bulk, events)))
        return time.perf_counter() - started

    workloads: list[tuple[str, Callable[[], float], Callable[[], float]]] = [
        ("one event per transaction", lambda: one_by_one(plain_one), lambda: one_by_one(chained_one)),
        (f"{writers} writers at once", lambda: at_once(plain_one), lambda: at_once(chained_one)),
        (f"batches of {bulk}", lambda: in_batches(plain_bulk), lambda: in_batches(chained_bulk)),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        (version,) = cursor.fetchone() or ("?",)
    print(f"A1 audit hash chain: {events} events per workload, PostgreSQL {version}")
    print(f"{'workload':32} {'plain s':>9} {'chained s':>10} {'plain ev/s':>11} {'chained ev/s':>13} {'ratio':>6}")
    for name, plain, chained in workloads:
        empty(unique=False)
        plain_seconds = plain()
        empty(unique=True)
        chained_seconds = chained()
        assert AuditEvent.objects.count() == events and audit_chain_check().ok
        print(
            f"{name:32} {plain_seconds:9.2f} {chained_seconds:10.2f} {events / plain_seconds:11.0f}"
            f" {events / chained_seconds:13.0f} {chained_seconds / plain_seconds:6.2f}"
        )

    started = time.perf_counter()
    check = audit_chain_check()
    walked = time.perf_counter() - started
    print(f"verify_audit walk: {check.events_checked} events in {walked:.2f} s ({check.events_checked / walked:.0f}/s)")


if __name__ == "__main__":
    main()
