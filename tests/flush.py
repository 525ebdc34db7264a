"""After a transactional test (the browser tests, and the tests that need real commits), empty only the tables it
wrote, on PostgreSQL.

Django's flush truncates every table (a new file for each table and index) and then runs post_migrate again to
recreate the content types, permissions and role groups: about half a second per test. Here the tables that hold
rows are found in one query and emptied with DELETE, with triggers off for the transaction (the foreign-key checks,
and the audit log's append-only rule, which is the database's and is tested on its own). The tables post_migrate
fills are left alone while they still hold what it made (their row counts and highest ids unchanged); when a test
changed them, Django's own flush runs instead. On SQLite, and without the rights to turn triggers off, Django's flush
runs as before.

Django's flush truncates, and on PostgreSQL the audit log and its checkpoints refuse TRUNCATE (migration 0024). So on
PostgreSQL it runs inside a transaction of its own that first sets those statement triggers aside (ALTER TABLE ...
DISABLE TRIGGER, which their owner, the role the tests run as, may do) and sets them back before it commits: a
failure rolls both back. This is the one place that does it; the application never does, and docs/SECURITY.md says
what a table's owner can do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from django.db import connections, transaction
from django.test import TransactionTestCase

# What post_migrate makes (chats.roles.ensure_role_groups and the auth and contenttypes apps).
MADE_BY_POST_MIGRATE = ("django_content_type", "auth_permission", "auth_group", "auth_group_permissions")

# The statement triggers that refuse TRUNCATE (migration 0024), which Django's flush issues.
NO_TRUNCATE_TRIGGERS = ("chats_auditevent_no_truncate", "chats_auditcheckpoint_no_truncate")

_original_teardown = TransactionTestCase._fixture_teardown  # type: ignore[attr-defined]
_made: dict[str, tuple[Any, ...]] = {}
_superuser: dict[str, bool] = {}


def _fingerprint(connection: Any) -> tuple[Any, ...]:
    columns = ", ".join(f"(SELECT count(*) FROM {t}), (SELECT max(id) FROM {t})" for t in MADE_BY_POST_MIGRATE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns}")
        return tuple(cursor.fetchone())


def _can_disable_triggers(connection: Any) -> bool:
    if connection.alias not in _superuser:
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            row = cursor.fetchone()
        _superuser[connection.alias] = bool(row and row[0])
    return _superuser[connection.alias]


def _empty_written_tables(connection: Any) -> None:
    tables = [
        name
        for name in connection.introspection.django_table_names(only_existing=True, include_views=False)
        if name not in MADE_BY_POST_MIGRATE
    ]
    quote = connection.ops.quote_name
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(
            " UNION ALL ".join(f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(name)})" for name in tables),
            tables,
        )
        written = [row[0] for row in cursor.fetchall()]
        if written:
            cursor.execute("SET LOCAL session_replication_role = replica")
            for name in written:
                cursor.execute(f"DELETE FROM {quote(name)}")


def _set_triggers(connection: Any, tables_triggers: Sequence[tuple[str, str]], state: str) -> None:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table, trigger in tables_triggers:
            cursor.execute(f"ALTER TABLE {quote(table)} {state} TRIGGER {quote(trigger)}")


@contextmanager
def truncation_allowed(aliases: Sequence[str]) -> Iterator[None]:
    """On each PostgreSQL database, a transaction in which the TRUNCATE-refusing triggers are off, and set back
    on before it commits."""
    with ExitStack() as stack:
        disabled = []
        for alias in aliases:
            connection = connections[alias]
            if connection.vendor != "postgresql":
                continue
            stack.enter_context(transaction.atomic(using=alias))
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                    " WHERE t.tgname = ANY(%s) AND pg_table_is_visible(c.oid)",
                    [list(NO_TRUNCATE_TRIGGERS)],
                )
                found = cursor.fetchall()
            _set_triggers(connection, found, "DISABLE")
            disabled.append((connection, found))
        yield
        for connection, found in disabled:
            _set_triggers(connection, found, "ENABLE")


def _django_flush(self: TransactionTestCase) -> None:
    with truncation_allowed(self._databases_names(include_mirrors=False)):  # type: ignore[attr-defined]
        _original_teardown(self)


def _fixture_teardown(self: TransactionTestCase) -> None:
    plain = self.available_apps is None and not self.serialized_rollback
    for alias in self._databases_names(include_mirrors=False):  # type: ignore[attr-defined]
        connection = connections[alias]
        if not plain or connection.vendor != "postgresql" or not _can_disable_triggers(connection):
            _django_flush(self)
            return
        if _made.get(alias) is not None and _fingerprint(connection) == _made[alias]:
            _empty_written_tables(connection)
        else:
            _django_flush(self)
            _made[alias] = _fingerprint(connection)


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[attr-defined]
