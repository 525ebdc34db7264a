"""Poison documents for the ingestion tests: one the boundary refuses, one the database refuses, and the real
PostgreSQL trigger that makes the database refuse it (a data exception, SQLSTATE 22000: Django's DataError)."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection

MARKER = "POISON-MARKER"


def chat(chat_id: str, answer: str = "Five degrees below the primers' melting temperature.") -> dict[str, Any]:
    return {
        "conversation_id": chat_id,
        "chat_history": [
            {"role": "user", "content": "Which annealing temperature?"},
            {"role": "assistant", "content": answer},
        ],
    }


# A document the boundary refuses: a lone surrogate, which no UTF-8 text holds (json.loads accepts the escape).
BOUNDARY_POISON = '{"conversation_id": "poison-b", "chat_history": [{"role": "user", "content": "bad \\ud800"}]}'
# A document the database refuses (once `refuse_in_database` is installed): its answer holds the marker.
DATABASE_POISON = json.dumps(chat("poison-d", f"an answer with {MARKER}"))


def refuse_in_database(table: str = "chats_message", *, on: str = "INSERT", column: str = "text") -> None:
    """Install (in the test's transaction, rolled back with it) a trigger that raises a data exception for a row of
    `table` whose `column` holds MARKER, BEFORE `on`."""
    name = f"test_refuse_{table}_{on.lower()}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF NEW.{column} LIKE '%%{MARKER}%%' THEN "
            "RAISE EXCEPTION 'poison marker refused' USING ERRCODE = 'data_exception'; END IF; "
            "RETURN NEW; END $$"
        )
        cursor.execute(f"CREATE TRIGGER {name} BEFORE {on} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()")
