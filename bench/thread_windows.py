"""P3 windows: a long thread's first screen against a short thread's, and the time to read all of it in chunks.

    python bench/thread_windows.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
                                   [--sizes 10,1000,5000] [--repeats 20]

Alone, it creates a database of its own on the server of --database-url (migrated to this code), ingests one
thread per size (bench.workload.long_thread: tool calls, injections, images) and drops the database at the end;
nothing leaves 127.0.0.1. `bench/run.py` calls `thread_windows` from its P3 part with the threads it ingested.

Through Django's test client (in process: the pages' own cost, no network), it prints:
  first response   the thread page's p50 (its first window, rendered), per size, and its queries
  ratios           the 1,000- and 5,000-message pages against the 10-message one (goal: <= x2)
  to the last      the chunks the page's script asks for (?after=<last position>&limit=), one after the other
                   until the end of the path, from the page's request: the time to the last chunk
  API window       the API's first window (?limit=) p50, and its queries
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "masterbrain_thread_windows_bench"
POSITION = re.compile(rb'<li class="message-item" data-position="(\d+)">')


def _timed(client: Any, url: str, repeats: int) -> tuple[float, int, int]:
    """p50 seconds of ``url`` over ``repeats`` GETs (after one warm-up), its query count and status."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)
    with CaptureQueriesContext(connection) as context:
        response = client.get(url)
    count = len(context.captured_queries)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        client.get(url)
        times.append(time.perf_counter() - started)
    return statistics.median(times), count, response.status_code


def _read_to_the_end(client: Any, conversation: Any) -> tuple[float, int, int]:
    """The page, then each chunk after the last position loaded until the path's end: seconds, chunks, messages."""
    from chats.selectors.threads import WINDOW_SIZE

    chunk_url = f"/conversations/{conversation.uuid}/messages/"
    started = time.perf_counter()
    body = client.get(conversation.get_absolute_url()).content
    loaded = [int(p) for p in POSITION.findall(body)]
    total = int(re.search(rb'data-total="(\d+)"', body).group(1))  # type: ignore[union-attr]
    chunks = 0
    while loaded and loaded[-1] < total - 1:
        response = client.get(chunk_url, {"after": loaded[-1], "limit": WINDOW_SIZE})
        assert response.status_code == 200, response.status_code
        more = [int(p) for p in POSITION.findall(response.content)]
        assert more and more[0] == loaded[-1] + 1, (loaded[-1], more[:1])
        loaded += more
        chunks += 1
    elapsed = time.perf_counter() - started
    assert loaded == list(range(total)), "every message once, in order"
    return elapsed, chunks, len(loaded)


def thread_windows(table: Any, client: Any, threads: dict[int, Any], repeats: int) -> None:
    """Add the P3 window rows to ``table`` (bench.run.Table, or anything with add(name, value, goal, verdict)).
    ``threads``: a conversation per size, the smallest the reference; ``client``: signed in as a reader."""
    from bench.run import ms, verdict

    firsts: dict[int, float] = {}
    for size, conversation in sorted(threads.items()):
        p50, count, status = _timed(client, conversation.get_absolute_url(), repeats)
        firsts[size] = p50
        table.add(f"P3 thread first response, {size} msgs", f"p50 {ms(p50)}, {count} queries (HTTP {status})")
    smallest = min(firsts)
    for size in sorted(firsts):
        if size == smallest:
            continue
        ratio = firsts[size] / firsts[smallest]
        table.add(
            f"P3 thread first response {size} / {smallest} msgs",
            f"{ms(firsts[size])} / {ms(firsts[smallest])} = x{ratio:.2f}",
            "goal: <= x2",
            verdict(ratio <= 2),
        )
    for size, conversation in sorted(threads.items()):
        elapsed, chunks, messages = _read_to_the_end(client, conversation)
        table.add(
            f"P3 thread to the last chunk, {size} msgs",
            f"{ms(elapsed)}: the page and {chunks} chunk{'s' if chunks != 1 else ''}, {messages} messages",
        )
    for size, conversation in sorted(threads.items()):
        p50, count, status = _timed(client, f"/api/v1/conversations/{conversation.uuid}/?limit=100", repeats)
        table.add(f"P3 thread API first window, {size} msgs", f"p50 {ms(p50)}, {count} queries (HTTP {status})")


class _PrintedTable:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, name: str, value: str, goal: str = "", verdict: str = "") -> None:
        self.rows.append((name, value, goal, verdict))
        print(f"{name:<44} {value:<58} {goal:<12} {verdict}", flush=True)


def main() -> None:
    from bench.server import DEFAULT_BASE_URL, Database

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL))
    parser.add_argument("--sizes", default="10,1000,5000")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    database = Database(args.database_url, DB_NAME)
    try:
        os.environ.update(database.env)
        os.environ["ALLOWED_HOSTS"] = os.environ.get("ALLOWED_HOSTS", "") + ",testserver"
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.test import Client

        from bench.workload import long_thread
        from chats.models import Source
        from chats.services.ingestion import conversation_ingest

        source = Source.objects.get_or_create(name="bench")[0]
        threads = {}
        for size in sizes:
            result = conversation_ingest(source=source, document=long_thread(size, seed=size))
            assert result.conversation is not None and result.conversation.message_count == size, result.errors
            threads[size] = result.conversation
        client = Client()
        client.force_login(User.objects.create_superuser("bench-admin", password=None))
        thread_windows(_PrintedTable(), client, threads, args.repeats)
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()


if __name__ == "__main__":
    main()
