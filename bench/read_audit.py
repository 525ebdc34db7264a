"""R1: what read audit costs the thread page, with it off and on.

    python bench/read_audit.py [--database-url postgres://postgres@127.0.0.1:5432/postgres] [--requests 200]
                               [--messages 10]

It creates a database of its own on the server of --database-url (migrated to this code) and drops it at the end;
nothing leaves 127.0.0.1. One conversation of --messages messages; --requests GETs of its page through Django's
test client (in process: the page's own cost, no network), p50 and p90 in milliseconds, as:
  off          a reviewer, MASTERBRAIN_READ_AUDIT off: nothing recorded
  on, repeat   a reviewer, read audit on, within the window: the cache says "already recorded", no query
  on, new      a reviewer, read audit on, every request a new view (the cache emptied before each): one INSERT
  auditor      an auditor, read audit on, within the window, with the Activity panel over a history of
               --history views and feedback changes (three more queries, and the panel rendered)
and the ratio of each to "off". The cache is this process's memory (no REDIS_URL), as in a single-server setup.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import DEFAULT_BASE_URL, Database, server_env  # noqa: E402

DB_NAME = "masterbrain_read_audit_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=DEFAULT_BASE_URL)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--history", type=int, default=300)
    args = parser.parse_args()

    database = Database(args.database_url, DB_NAME)
    try:
        os.environ.update(server_env(database.url))
        os.environ.pop("REDIS_URL", None)
        run(args.requests, args.messages, args.history)
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()


def _document(messages: int) -> dict[str, Any]:
    turns = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"Turn {n}: why do the primers form dimers?"}
        for n in range(messages)
    ]
    return {"chat_id": "bench-read-audit", "title": "Read audit bench", "main_messages": turns}


def run(requests: int, messages: int, history: int) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.cache import cache
    from django.test import Client, override_settings

    from chats.models import ReadEvent, Source
    from chats.services.feedback import feedback_submit, feedback_update
    from chats.services.ingestion import conversation_ingest

    source = Source.objects.create(name="bench-reads")
    conversation = conversation_ingest(source=source, document=_document(messages)).conversation
    assert conversation is not None
    reviewer = User.objects.create_user(username="bench-reviewer")
    reviewer.groups.add(Group.objects.get(name="Reviewers"))
    auditor = User.objects.create_user(username="bench-auditor")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, score=1, comment="0")
    for n in range(1, history // 2):
        feedback_update(actor=reviewer, feedback=feedback, score=1, labels=[], comment=str(n), correction="")
    ReadEvent.objects.bulk_create(
        ReadEvent(conversation_uuid=conversation.uuid, viewer_name=f"reader-{n}", via="page")
        for n in range(history // 2)
    )
    url = conversation.get_absolute_url()

    def timed(user: User, *, audit: bool, fresh: bool) -> list[float]:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        samples = []
        with override_settings(MASTERBRAIN_READ_AUDIT=audit):
            for n in range(requests + 10):
                if fresh:
                    cache.clear()
                started = time.perf_counter()
                response = client.get(url)
                elapsed = time.perf_counter() - started
                assert response.status_code == 200, response.status_code
                if n >= 10:  # warm-up
                    samples.append(elapsed * 1000)
        return samples

    cache.clear()
    before = ReadEvent.objects.count()
    rows = [
        ("off", timed(reviewer, audit=False, fresh=False)),
        ("on, repeat", timed(reviewer, audit=True, fresh=False)),
        ("on, new", timed(reviewer, audit=True, fresh=True)),
        ("auditor", timed(auditor, audit=True, fresh=False)),
    ]
    recorded = ReadEvent.objects.count() - before
    base = statistics.median(rows[0][1])
    print(f"R1 thread page, {messages} msgs, {requests} requests each (in-process test client)")
    print(f"{'mode':<12} {'p50 ms':>8} {'p90 ms':>8} {'p50 / off':>10}")
    for name, samples in rows:
        p50 = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        print(f"{name:<12} {p50:8.2f} {p90:8.2f} {p50 / base:10.2f}")
    # off: none; on, repeat: the first only; on, new: every one; auditor: the first only.
    print(f"views recorded: {recorded} (expected {1 + requests + 10 + 1})")


if __name__ == "__main__":
    main()
