"""Rows written by COPY in PostgreSQL's binary format, and primary keys reserved from a table's sequence.

Generic plumbing for a set-based writer (``chats.services.bulk_writer``): it knows tables, columns and values,
nothing of what they mean. PostgreSQL only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg
from psycopg import postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import TupleRow

from chats import strict_json


class _JsonbBinaryDumper(Dumper):
    """A jsonb value in the binary format (a version byte, then the text) from the decoded value, written by
    ``strict_json.dump_bytes`` in one call; ``_JSON_NULL`` stands for JSON null where None means SQL NULL."""

    format = Format.BINARY
    oid = postgres.types["jsonb"].oid

    def dump(self, obj: object) -> bytes:
        if obj is _JSON_NULL:
            return b"\x01null"
        return b"\x01" + strict_json.dump_bytes(obj)


_JSON_NULL = object()


def copy_rows(
    cursor: psycopg.Cursor[TupleRow],
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    json_columns: frozenset[str],
    nullable_json: frozenset[str] = frozenset(),
) -> None:
    """COPY rows in, in PostgreSQL's binary format: each value goes as its bytes and a length, so that neither side
    escapes or unescapes the kilobytes of a tool result character by character, as the text format does. JSON
    columns take the Python value; a None is SQL NULL where the column allows it and JSON null elsewhere."""
    json_null = [index for index, name in enumerate(columns) if name in json_columns and name not in nullable_json]
    cursor.adapters.register_dumper(None, _JsonbBinaryDumper)
    types = column_types(cursor, table, columns)
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            if json_null:
                values = list(row)
                for index in json_null:
                    if values[index] is None:
                        values[index] = _JSON_NULL
                copy.write_row(values)
            else:
                copy.write_row(row)


_TYPES: dict[str, dict[str, int]] = {}


def column_types(cursor: psycopg.Cursor[TupleRow], table: str, columns: Sequence[str]) -> list[int]:
    """The type of each column, as the binary COPY needs it (read from the catalog once per table and process)."""
    if table not in _TYPES:
        cursor.execute(
            "SELECT attname, atttypid::integer FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            [table],
        )
        _TYPES[table] = dict(cursor.fetchall())
    return [_TYPES[table][name] for name in columns]


def ids_allocate(cursor: psycopg.Cursor[TupleRow], table: str, count: int) -> list[int]:
    """Primary keys reserved from the table's sequence, ascending."""
    if count == 0:
        return []
    cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count])
    return sorted(row[0] for row in cursor.fetchall())
