"""R1: how much the database grows per megabyte sent to ingest, receipts with payloads stored once (this code)
against receipts that each kept their whole payload (the scheme before migration 0008), measured in one run.

    python bench/receipts_growth.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
                                    [--documents 200] [--resends 5] [--chats 100] [--turns 6]

It creates two databases of its own on the server of --database-url and drops them at the end; nothing leaves
127.0.0.1. In the first, migrated to this code, every body goes through the ingest endpoints in this process
(Django's test client: authentication, the quota's count, decoding, planning, writing). The second is migrated back
to 0007, the scheme before: for every receipt the first one wrote, the receipt that code wrote (the same outcome,
format, warnings and errors, with the document as jsonb, or a body that is not JSON as text with the bytes that are
not UTF-8 escaped) goes into its receipt table, with that table's indexes. Growth is pg_total_relation_size
(table, TOAST and indexes) of the receipt tables: chats_ingestionreceipt and chats_receiptpayload here,
chats_ingestionreceipt there.

Workloads, each measured on its own:
  resent      --documents documents (about 20 messages, 1-5 KB tool results), each sent --resends times to
              /ingest/: the first is created, the rest are unchanged
  bulk        the same documents again, as NDJSON bodies of 50 to /ingest/bulk/, --resends times
  growing     a logger sending each of --chats chats whole at every one of --turns turns: every body is new
  not UTF-8   bodies of bytes that are not UTF-8 (refused with 400, each kept in a receipt), each sent twice

Then, on the distinct payloads the run stored: their size kept as zlib (this code) against the same bytes kept as
bytea under PostgreSQL's own TOAST compression, lz4 and pglz; and zlib's levels, for size and speed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from bench.server import DEFAULT_BASE_URL, Database, server_env  # noqa: E402

NEW_DB = "masterbrain_receipts_bench"
OLD_DB = "masterbrain_receipts_bench_old"
MB = 1024 * 1024

NEW_TABLES = ("chats_ingestionreceipt", "chats_receiptpayload")
OLD_TABLES = ("chats_ingestionreceipt",)


def relation_bytes(conn: psycopg.Connection[Any], tables: tuple[str, ...]) -> int:
    row = conn.execute(
        "SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(%s::text[]) AS t", [list(tables)]
    ).fetchone()
    assert row is not None
    return int(row[0])


def breakdown(conn: psycopg.Connection[Any], tables: tuple[str, ...]) -> str:
    """Each table's rows, TOAST and indexes, in MB."""
    parts = []
    for table in tables:
        row = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_table_size(%s::regclass) - pg_relation_size(%s::regclass)",
            [table, table, table],
        ).fetchone()
        assert row is not None
        indexes = conn.execute(
            "SELECT c.relname, pg_relation_size(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass ORDER BY 2 DESC",
            [table],
        ).fetchall()
        listed = ", ".join(f"{name} {size / MB:.2f}" for name, size in indexes)
        parts.append(f"{table}: rows {row[0] / MB:.2f}, TOAST {row[1] / MB:.2f}, indexes {listed}")
    return "; ".join(parts)


class OldScheme:
    """The receipt table as migration 0007 left it, written as the code of that time wrote it."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn
        row = conn.execute(
            "INSERT INTO chats_source (name, description, is_active, created_at) VALUES ('bench', '', true, now()) "
            "RETURNING id"
        ).fetchone()
        assert row is not None
        self.source_id = int(row[0])
        # The receipts name the key and conversation ids of the other database: the foreign keys go (their indexes
        # stay), so that each row holds the same values as the receipt it stands for.
        for (name,) in conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'chats_ingestionreceipt'::regclass AND contype = 'f' "
            "AND conname NOT LIKE '%%source%%'"
        ).fetchall():
            conn.execute(f'ALTER TABLE chats_ingestionreceipt DROP CONSTRAINT "{name}"')
        conn.commit()

    def write(self, receipts: list[dict[str, Any]]) -> None:
        rows = []
        for receipt in receipts:
            content: bytes = receipt["content"]
            document: Any = None
            text = ""
            try:
                if b"\\u0000" in content:
                    raise ValueError("jsonb holds no NUL")
                document = json.loads(content)
                digest = hashlib.sha256(
                    json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
                ).hexdigest()
            except ValueError:
                text = content.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
                digest = hashlib.sha256(content).hexdigest()
            rows.append(
                (
                    uuid.uuid4(),
                    self.source_id,
                    receipt["api_key_id"],
                    receipt["conversation_id"],
                    receipt["external_id"],
                    receipt["input_format"],
                    receipt["outcome"],
                    Jsonb(document) if document is not None else None,
                    text,
                    digest,
                    len(content),
                    receipt["messages_added"],
                    Jsonb(receipt["warnings"]),
                    Jsonb(receipt["errors"]),
                    receipt["created_at"],
                )
            )
        with self.conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO chats_ingestionreceipt (uuid, source_id, api_key_id, conversation_id, external_id, "
                "input_format, outcome, payload, payload_text, payload_sha256, size_bytes, messages_added, warnings, "
                "errors, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
        self.conn.commit()


def new_receipts_since(mark: int) -> tuple[int, list[dict[str, Any]]]:
    """The receipts written after id `mark`, with the bytes each names."""
    from chats.models import IngestionReceipt

    found = []
    last = mark
    for receipt in IngestionReceipt.objects.filter(pk__gt=mark).select_related("payload").order_by("pk"):
        assert receipt.payload is not None
        found.append(
            {
                "content": receipt.payload.content,
                "api_key_id": receipt.api_key_id,
                "conversation_id": receipt.conversation_id,
                "external_id": receipt.external_id,
                "input_format": receipt.input_format,
                "outcome": receipt.outcome,
                "messages_added": receipt.messages_added,
                "warnings": receipt.warnings,
                "errors": receipt.errors,
                "created_at": receipt.created_at,
            }
        )
        last = receipt.pk
    return last, found


def growing_histories(chats: int, turns: int, seed: int) -> list[list[bytes]]:
    """For each chat, its whole history as sent at every turn (with an id: a logger that names its chats)."""
    from chats.demo.generator import SENTENCES

    generator = random.Random(seed)
    histories = []
    for chat in range(chats):
        messages: list[dict[str, Any]] = []
        bodies = []
        for turn in range(turns):
            question = " ".join(generator.choice(SENTENCES) for _ in range(2))
            answer = " ".join(generator.choice(SENTENCES) for _ in range(generator.randint(4, 12)))
            messages += [
                {"role": "user", "content": f"{question} (turn {turn})"},
                {"role": "assistant", "content": answer},
            ]
            body = {"conversation_id": f"growing-{seed}-{chat}", "chat_history": messages}
            bodies.append(json.dumps(body, ensure_ascii=False).encode())
        histories.append(bodies)
    return histories


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL))
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--resends", type=int, default=5)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--skip", default="", help="comma-separated workloads to skip: resent, bulk, growing, utf8")
    args = parser.parse_args()

    new_db = Database(args.database_url, NEW_DB)
    old_db = Database(args.database_url, OLD_DB)
    try:
        old_db.manage("migrate", "chats", "0007", "--verbosity", "0")
        key = new_db.create_source("bench")
        env = server_env(new_db.url) | {
            "ALLOWED_HOSTS": "testserver",
            "MASTERBRAIN_KEY_DAILY_BYTES": "0",
            "LOG_LEVEL": "ERROR",  # not a line per refused body
        }
        os.environ.update(env)
        import django

        django.setup()
        with psycopg.connect(new_db.url, autocommit=True) as new_conn, psycopg.connect(old_db.url) as old_conn:
            return run(args, key, new_conn, OldScheme(old_conn))
    finally:
        new_db.drop()
        old_db.drop()


def run(args: argparse.Namespace, key: str, new_conn: psycopg.Connection[Any], old: OldScheme) -> int:
    from django.test import Client

    from bench.workload import documents, encode, ndjson_bodies

    client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")
    rows: list[tuple[str, str]] = []
    mark = 0

    def measure(name: str, send: Callable[[], int]) -> None:
        nonlocal mark
        before_new, before_old = relation_bytes(new_conn, NEW_TABLES), relation_bytes(old.conn, OLD_TABLES)
        started = time.perf_counter()
        sent = send()
        elapsed = time.perf_counter() - started
        mark, receipts = new_receipts_since(mark)
        old.write(receipts)
        grown_new = relation_bytes(new_conn, NEW_TABLES) - before_new
        grown_old = relation_bytes(old.conn, OLD_TABLES) - before_old
        count = max(len(receipts), 1)
        figure = (
            f"{sent / MB:.1f} MB sent, {len(receipts):,} receipts ({elapsed:.0f} s). Database growth per MB sent: "
            f"before {grown_old / sent:.3f} MB ({grown_old / count / 1024:.1f} KB a receipt), now "
            f"{grown_new / sent:.3f} MB ({grown_new / count / 1024:.2f} KB a receipt): x{grown_old / max(grown_new, 1):.1f} less"
        )
        rows.append((name, figure))
        print(f"  {name}: {figure}", file=sys.stderr, flush=True)

    docs = [encode(document) for document in documents(args.documents, seed=args.seed)]

    def post(body: bytes, url: str = "/api/v1/ingest/", kind: str = "application/json") -> int:
        response = client.post(url, data=body, content_type=kind)
        assert response.status_code in (200, 201, 400), response.content[:300]
        return len(body)

    skip = set(filter(None, args.skip.split(",")))
    if "resent" not in skip:
        measure("R1 resent, one document a request", lambda: sum(post(d) for _ in range(args.resends) for d in docs))
    if "bulk" not in skip:
        bulk = ndjson_bodies([json.loads(d) for d in docs], per_body=50)
        measure(
            "R1 resent in bulk (NDJSON, 50 a body)",
            lambda: sum(
                post(body, "/api/v1/ingest/bulk/", "application/x-ndjson") for _ in range(args.resends) for body in bulk
            ),
        )
    histories = growing_histories(args.chats, args.turns, args.seed)
    if "growing" not in skip:
        measure(
            "R1 growing histories, every body new",
            lambda: sum(post(bodies[turn]) for turn in range(args.turns) for bodies in histories),
        )
    if "utf8" not in skip:
        generator = random.Random(args.seed)
        not_utf8 = [generator.randbytes(16_384) for _ in range(40)]  # random: not UTF-8, nothing to compress
        measure(
            "R1 bodies that are not UTF-8, each twice", lambda: sum(post(body) for _ in range(2) for body in not_utf8)
        )
    rows.append(("R3 where the bytes are, now", breakdown(new_conn, NEW_TABLES)))
    rows.append(("R3 where the bytes are, before", breakdown(old.conn, OLD_TABLES)))

    # The same distinct payloads, kept by PostgreSQL's own compression instead of zlib.
    contents = {d for d in docs} | {body for bodies in histories for body in bodies}
    json_bytes = sum(len(c) for c in contents)
    sizes = {}
    with new_conn.cursor() as cursor:
        for label, column in (
            ("zlib level 6, stored EXTERNAL (this code)", "b SET STORAGE EXTERNAL"),
            ("lz4 by TOAST", "b SET COMPRESSION lz4"),
            ("pglz by TOAST (the default)", "b SET COMPRESSION pglz"),
            ("uncompressed", "b SET STORAGE EXTERNAL"),
        ):
            cursor.execute("CREATE TEMPORARY TABLE bench_payloads (b bytea)")
            cursor.execute(f"ALTER TABLE bench_payloads ALTER COLUMN {column}")
            values = [zlib.compress(c, 6) if label.startswith("zlib") else c for c in contents]
            with cursor.copy("COPY bench_payloads (b) FROM STDIN") as copy:
                for value in values:
                    copy.write_row((value,))
            sizes[label] = relation_bytes(new_conn, ("bench_payloads",))
            cursor.execute("DROP TABLE bench_payloads")
    stored = ", ".join(f"{label} {size / json_bytes:.3f}" for label, size in sizes.items())
    rows.append(
        (
            "R2 JSON payloads kept, bytes per byte received",
            f"{len(contents):,} distinct payloads, {json_bytes / MB:.1f} MB: {stored}",
        )
    )
    levels = []
    for level in (1, 6, 9):
        started = time.perf_counter()
        compressed = sum(len(zlib.compress(c, level)) for c in contents)
        elapsed = time.perf_counter() - started
        levels.append(f"level {level}: {compressed / json_bytes:.3f} of the size, {json_bytes / MB / elapsed:.0f} MB/s")
    rows.append(("R2 zlib levels on the same payloads", "; ".join(levels)))

    width = max(len(name) for name, _ in rows)
    print(f"{'row':<{width}}  figure")
    print(f"{'-' * width}  {'-' * 40}")
    for name, figure in rows:
        print(f"{name:<{width}}  {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
