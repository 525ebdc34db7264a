"""What PostgreSQL's own ``to_tsvector`` costs on P5's messages: the floor under search-ready ingest.

    python bench/tsvector_cost.py [--documents 200] [--database-url postgres://postgres@127.0.0.1:5432/postgres]

It takes the text of P5's documents' messages (``bench.workload.comparison_documents``, the seeds of
``bench/run.py``'s first P5 run), copies it into an unlogged scratch table (dropped at the end) and times, on one
connection (one core), ``to_tsvector`` over every row: with the configuration the application uses (``english``),
with ``simple`` (no stemming), and on the text with JSON's punctuation blanked first. It prints the messages a
second one core can vectorise in each case, and the share of the text's tokens by kind (``ts_debug``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.server import DEFAULT_BASE_URL  # noqa: E402
from bench.workload import comparison_documents  # noqa: E402

TABLE = "bench_tsvector_cost"
EXPRESSIONS = {
    "the text": "t",
    "JSON punctuation blanked": "regexp_replace(t, '[{}\\[\\]\":,]', ' ', 'g')",
}


def message_texts(documents: int) -> list[str]:
    texts = []
    for document in comparison_documents(documents, seed=55, first_index=0):
        for message in document.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.append("\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict)))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_BASE_URL)
    args = parser.parse_args()
    texts = message_texts(args.documents)
    chars = sum(map(len, texts))
    print(
        f"{len(texts):,} messages of {args.documents:,} P5 documents: {chars / 1e6:.1f} M characters, mean {statistics.mean(map(len, texts)):,.0f}"
    )
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"CREATE UNLOGGED TABLE {TABLE} (t text)")
        try:
            with conn.cursor().copy(f"COPY {TABLE} (t) FROM STDIN") as copy:
                for text in texts:
                    copy.write_row([text])
            for config in ("english", "simple"):
                for label, expression in EXPRESSIONS.items():
                    started = time.perf_counter()
                    conn.execute(f"SELECT sum(length(to_tsvector('{config}', {expression}))) FROM {TABLE}")
                    took = time.perf_counter() - started
                    print(
                        f"to_tsvector('{config}'), {label}: {len(texts) / took:,.0f} msgs/s on one core, "
                        f"{took * 1e6 / len(texts):,.0f} us a message, {chars / took / 1e6:.1f} M characters/s"
                    )
            kinds = conn.execute(
                f"SELECT alias, count(*) FROM {TABLE}, ts_debug('english', t) GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
            total = sum(count for _, count in kinds)
            print("tokens by kind: " + ", ".join(f"{alias} {count / total:.0%}" for alias, count in kinds[:6]))
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")


if __name__ == "__main__":
    main()
