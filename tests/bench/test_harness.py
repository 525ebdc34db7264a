"""The benchmark harness: a deterministic workload, and a small run that prints every row of the table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from bench.workload import documents, long_thread, ndjson_bodies, scale_rows

ROOT = Path(__file__).resolve().parents[2]

ROWS = [
    "P1 ingest over HTTP (msgs/s)",
    "P1 raw COPY of the same rows (msgs/s)",
    "P1 ratio HTTP / COPY",
    "P1 single-document ingest latency",
    "P1 in-process bulk path (msgs/s)",
    "P1 index cost: without GIN on message.search_vector + its trigger",
    "P1 index cost: without GIN on conversation.title_vector + its trigger",
    "P1 index cost: without every secondary index",
    "P1 message search vectors' share of the in-process ingest",
    "P1 cost split in-process",
    "P1 profile (top by own time)",
    "P2 replay over HTTP (msgs/s)",
    "P2 ratio replay / P1",
    "P2 database unchanged (counts + md5)",
    "P6 id-less growth, turn by turn",
    "Memory: worker peak RSS, bulk at the limit",
    "P5 default (no broker), 1 client: acknowledged = search-ready",
    "P5 with a Celery worker, 1 client: acknowledged = search-ready",
    "P5 default (no broker), 4 clients: acknowledged = search-ready",
    "P5 with a Celery worker, 4 clients: acknowledged = search-ready",
    "P5 raw COPY of the same messages, one table",
    "P5 search-ready at acknowledgement",
    "Growth: index cost per turn, turn 10 and turn 30",
    "Growth: whole turn (ingestion service, in-process)",
    "P3 thread page, 10 msgs",
    "P3 thread API, 10 msgs",
    "P3 thread query counts constant",
    "P3 list page /conversations/",
    "P3 admin conversation changelist",
    "P3 admin message changelist",
    "P4 rows loaded by COPY",
    "P4 list, first page",
    "P4 list, page",
    "P4 filtered list (model + tool calls + dates)",
    "P4 full-text search ?q=photobleaching, page",
    "P4 full-text search ?q=replicates (common word), page",
    "P4 full-text search ?q=gradient contamination (two-word AND), page",
    "P4 artifact-id lookup",
    "P4 deep page / first page",
    "L1 parser cost ratio at x100 bytes (worst case)",
]


def test_the_same_seed_gives_the_same_bytes():
    first = ndjson_bodies(documents(16, seed=3), per_body=5)
    again = ndjson_bodies(documents(16, seed=3), per_body=5)
    other = ndjson_bodies(documents(16, seed=4), per_body=5)

    assert first == again and first != other
    assert len(first) == 4
    assert long_thread(50, seed=1) == long_thread(50, seed=1)
    assert len(long_thread(50, seed=1)["main_messages"]) == 49  # and one scenario message
    rows = list(scale_rows(3, 20, source_id=1, seed=9))
    assert rows == list(scale_rows(3, 20, source_id=1, seed=9))
    assert sum(1 for table, _ in rows if table == "chats_message") == 60


def test_disjoint_workloads_share_no_conversation():
    from chats import ingest

    def ids(docs: list[Any]) -> set[str | None]:
        return {ingest.parse_document(d).external_id for d in docs} - {None}

    assert not ids(documents(12, seed=1)) & ids(documents(12, seed=2, first_index=1_000_000))


@pytest.mark.postgres
@pytest.mark.servers  # the benchmark starts gunicorn, a Celery worker and databases of its own: a few minutes
def test_a_smoke_run_prints_every_row():
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    database = settings.DATABASES["default"]
    base = f"postgres://{database['USER'] or 'postgres'}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/postgres"
    completed = subprocess.run(
        [
            sys.executable,
            "bench/run.py",
            "--scale",
            "smoke",
            "--database-url",
            base,
            "--database-name",
            # A name of this test database's own: test runs side by side do not drop each other's.
            re.sub(r"[^a-z0-9_]", "_", f"{database['NAME']}_bench_smoke".lower()),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    table = completed.stdout
    for header in ("date", "machine", "versions", "scale"):
        assert any(line.startswith(header) for line in table.splitlines()), header
    for row in ROWS:
        assert row in table, row
