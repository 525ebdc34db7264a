"""Where each table goes when PostgreSQL is distributed by conversation with Citus (docs/SCALING.md), and the rules
the schema keeps so that it can be.

One table, `TABLES`, places every model: *distributed* by conversation id and co-located with the conversations,
a *reference* table copied whole to every node (small, read by joins everywhere: sources, labels, users, queues),
or *local* to the coordinator (append-only logs and per-key counters that no distributed row points at).
`schema_problems()` checks the models against it:

- every table is placed, and every placed table exists;
- every distributed table names its conversation (`conversation`, NOT NULL; the conversations themselves are
  distributed by `id`);
- every unique constraint of a distributed table includes the conversation, except those `TABLES` names with
  what replaces them when distributing;
- no foreign key crosses conversations or leaves its placement: a distributed row points at rows of its own
  conversation (the foreign key becomes composite, on the conversation too) or at a reference table; a reference
  or local row never points at a distributed one; the exceptions `TABLES` names are dropped when distributing.

`citus_ddl()` writes the statements that distribute a database migrated by this project (read from its catalog, so
that the constraint names are the database's own); docs/SCALING.md holds their output, and the tests apply the
constraint changes to a populated database to show that they hold.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connection, models


class Placement(enum.StrEnum):
    DISTRIBUTED = "distributed"
    REFERENCE = "reference"
    LOCAL = "local"


@dataclass(frozen=True)
class Change:
    """What becomes of a unique constraint that leaves out the distribution column, or of a foreign key that leaves
    its placement. Without `sql`, a unique constraint gains the distribution column and a foreign key is dropped;
    with it, the constraint is dropped and `sql` runs instead."""

    why: str
    sql: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    placement: Placement
    # By a unique constraint's name (a unique field's name for `unique=True`), or a foreign key's field name.
    changes: Mapping[str, Change] = field(default_factory=dict)


D, R, L = Placement.DISTRIBUTED, Placement.REFERENCE, Placement.LOCAL
ROOT = "chats.Conversation"
CONVERSATION_COLUMN = "conversation_id"

_UUID4 = Change("a random uuid4: unique together with the distribution column (no collision is ever expected)")

TABLES: dict[str, Table] = {
    # The conversations, and every row under one.
    ROOT: Table(
        D,
        changes={
            "uuid": _UUID4,
            "conversation_unique_source_external_id_digest": Change(
                "A table distributed by id cannot hold a unique key that leaves the id out. The key moves to a table "
                "of its own, distributed by the key: ingestion inserts there (ON CONFLICT DO NOTHING) before it "
                "creates the conversation, and looks conversations up there by external id.",
                sql=(
                    "CREATE TABLE chats_conversation_key (external_id_digest varchar(64) NOT NULL, "
                    "source_id bigint NOT NULL, conversation_id bigint NOT NULL, "
                    "CONSTRAINT chats_conversation_key_pkey PRIMARY KEY (external_id_digest, source_id));",
                    "INSERT INTO chats_conversation_key SELECT external_id_digest, source_id, id FROM chats_conversation;",
                ),
            ),
        },
    ),
    "chats.Message": Table(D),
    "chats.ModelCall": Table(D),
    "chats.ToolCall": Table(D),
    "chats.InjectedArtifact": Table(D),
    "chats.ContextArtifactId": Table(D),
    "chats.Feedback": Table(D, changes={"uuid": _UUID4}),
    "chats.FeedbackLabel": Table(D),
    "chats.QueueItem": Table(D),
    "chats.Lease": Table(D),
    "chats.Review": Table(D),
    "chats.Resolution": Table(D, changes={"item": Change("one resolution per item: an item is in one conversation")}),
    "chats.DatasetItem": Table(D),
    # Small tables every node joins against.
    "chats.Source": Table(R),
    "chats.ApiKey": Table(R),
    "chats.Label": Table(R),
    "chats.Queue": Table(R),
    "chats.Queue_members": Table(R),
    "chats.QueueRule": Table(R),
    "chats.RubricVersion": Table(R),
    "chats.Dataset": Table(R),
    "chats.Dataset_queues": Table(R),
    "chats.SavedView": Table(R),
    # The Trends rollups: recomputed per (day, source) on the coordinator from the rows of the nodes.
    "chats.TrendDay": Table(L),
    "chats.TrendTally": Table(L),
    "chats.TrendMember": Table(L),
    "auth.User": Table(R),
    "auth.Group": Table(R),
    "auth.Permission": Table(R),
    "auth.Group_permissions": Table(R),
    "auth.User_groups": Table(R),
    "auth.User_user_permissions": Table(R),
    "contenttypes.ContentType": Table(R),
    # On the coordinator: logs and counters no distributed row points at.
    "chats.IngestionReceipt": Table(
        L,
        changes={
            "conversation": Change(
                "Dropped: a receipt keeps its conversation_id and is joined to it by value; deleting a conversation "
                "clears its receipts' column in the same transaction, as SET_NULL does now."
            ),
        },
    ),
    "chats.ReceiptPayload": Table(L),
    "chats.ExportJob": Table(L),
    "chats.ExportJobPart": Table(L),
    "chats.DatasetLine": Table(L),
    "chats.QueueRuleRun": Table(L),
    "chats.ApiKeyDailyUsage": Table(L),
    "chats.AuditEvent": Table(L),
    "chats.AuditCheckpoint": Table(L),
    "chats.ReadEvent": Table(L),
    "sessions.Session": Table(L),
    "admin.LogEntry": Table(L),
    "axes.AccessAttempt": Table(L),
    "axes.AccessAttemptExpiration": Table(L),
    "axes.AccessFailureLog": Table(L),
    "axes.AccessLog": Table(L),
}


def _models() -> dict[str, type[models.Model]]:
    return {m._meta.label: m for m in apps.get_models(include_auto_created=True) if m._meta.managed}


def _unique_sets(model: type[models.Model]) -> Iterator[tuple[str, set[str]]]:
    """(name, columns) of every unique constraint but the primary key: unique fields under their field's name."""
    for f in model._meta.concrete_fields:
        if f.unique and not f.primary_key:
            yield f.name, {str(f.column)}
    for together in model._meta.unique_together:
        yield "unique_together " + ",".join(together), {_column(model, n) for n in together}
    for constraint in model._meta.constraints:
        if isinstance(constraint, models.UniqueConstraint):
            columns = {_column(model, n) for n in constraint.fields}
            for expression in constraint.expressions:
                columns |= {_column(model, ref) for ref in _field_refs(expression)}
            yield str(constraint.name), columns


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return str(field.column)


def _field_refs(expression: object) -> Iterator[str]:
    if isinstance(expression, models.F):
        yield str(getattr(expression, "name"))  # noqa: B009  (F's name is untyped in the stubs)
    for source in getattr(expression, "get_source_expressions", list)():
        yield from _field_refs(source)


def _allowed(table: Table, target_model: Any, tables: Mapping[str, Table] = TABLES) -> bool:
    """Whether a foreign key of `table` may point at `target_model` once distributed: a distributed row at its own
    conversation's rows or a reference table, a reference row at reference tables, a local row at either."""
    target = tables.get(target_model._meta.label)
    return target is None or target.placement in {D: {D, R}, R: {R}, L: {R, L}}[table.placement]


def distribution_column(label: str) -> str:
    return "id" if label == ROOT else CONVERSATION_COLUMN


def schema_problems(
    found: Mapping[str, type[models.Model]] | None = None, tables: Mapping[str, Table] | None = None
) -> list[str]:
    """What in the models (every installed one unless `found`) keeps the schema from being distributed as `tables`
    (TABLES unless given) says; empty when nothing does."""
    found = _models() if found is None else found
    tables = TABLES if tables is None else tables
    problems = [f"{label}: not placed in chats.citus_placement.TABLES" for label in sorted(set(found) - set(tables))]
    problems += [f"{label}: placed, but no such model" for label in sorted(set(tables) - set(found))]
    for label, model in sorted(found.items()):
        table = tables.get(label)
        if table is None:
            continue
        used: set[str] = set()
        if table.placement is D:
            if label != ROOT:
                try:
                    conversation = model._meta.get_field("conversation")
                except Exception:
                    conversation = None
                if not (
                    isinstance(conversation, models.ForeignKey)
                    and conversation.related_model is found[ROOT]
                    and not conversation.null
                ):
                    problems.append(f"{label}: distributed, but has no NOT NULL foreign key `conversation`")
            column = distribution_column(label)
            for name, columns in _unique_sets(model):
                if column not in columns:
                    if name in table.changes:
                        used.add(name)
                    else:
                        problems.append(f"{label}: unique {name} leaves out {column}")
        for f in model._meta.concrete_fields:
            if not f.is_relation or f.related_model is None:
                continue
            if not _allowed(table, f.related_model, tables):
                if f.name in table.changes:
                    used.add(f.name)
                else:
                    target = tables[f.related_model._meta.label].placement
                    problems.append(
                        f"{label}.{f.name}: a {table.placement} table points at the {target} "
                        f"{f.related_model._meta.label}"
                    )
        problems += [
            f"{label}: changes names {name}, which needs no change" for name in sorted(set(table.changes) - used)
        ]
    return problems


# --- The statements that distribute a database of this schema (PostgreSQL) --------------------------------------


def _catalog(table: str) -> list[tuple[str, str, str]]:
    """(name, type, definition) of a table's constraints, from pg_constraint, in name order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'f') ORDER BY conname",
            [table],
        )
        return list(cursor.fetchall())


def _unique_indexes(table: str) -> list[tuple[str, str]]:
    """(name, definition) of the unique indexes that back no constraint (UniqueConstraint with expressions or a
    condition), from pg_index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass AND i.indisunique AND NOT i.indisprimary "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) ORDER BY c.relname",
            [table],
        )
        return list(cursor.fetchall())


@dataclass(frozen=True)
class Ddl:
    """The constraint changes (plain PostgreSQL, which the tests apply) and the Citus calls that follow them."""

    constraints: list[str]
    citus: list[str]

    def text(self) -> str:
        return "\n".join(["BEGIN;", *self.constraints, *self.citus, "COMMIT;"]) + "\n"


def citus_ddl() -> Ddl:
    """The statements that distribute this database by conversation: foreign keys between distributed tables, and
    the primary and unique keys of distributed tables, gain the distribution column; the dropped foreign keys go;
    then the tables become reference, local or distributed ones (co-located with the conversations)."""
    found = _models()
    table_of = {label: found[label]._meta.db_table for label in TABLES if label in found}
    placement_of = {table_of[label]: TABLES[label].placement for label in table_of}
    drop_fks: list[str] = []
    add_fks: list[str] = []
    keys: list[str] = []
    for label, db_table in sorted(table_of.items(), key=lambda kv: kv[1]):
        table, model, column_d = TABLES[label], found[label], distribution_column(label)
        dropped = {
            _column(model, n)
            for n in table.changes
            if _is_fk(model, n) and not _allowed(table, model._meta.get_field(n).related_model)
        }
        by_name = {_constraint_name(model, n): change for n, change in table.changes.items()}
        for name, kind, definition in _catalog(db_table):
            columns = definition[definition.index("(") + 1 : definition.index(")")]
            if kind == "f":
                target = definition.split("REFERENCES ", 1)[1].split("(", 1)[0]
                if columns in dropped:
                    drop_fks.append(f"ALTER TABLE {db_table} DROP CONSTRAINT {name};")
                elif table.placement is D and placement_of.get(target) is D and columns != CONVERSATION_COLUMN:
                    rest = definition.split(")", 2)[2]  # what follows REFERENCES target(id)
                    drop_fks.append(f"ALTER TABLE {db_table} DROP CONSTRAINT {name};")
                    add_fks.append(
                        f"ALTER TABLE {db_table} ADD CONSTRAINT {name} FOREIGN KEY ({CONVERSATION_COLUMN}, {columns}) "
                        f"REFERENCES {target}({CONVERSATION_COLUMN}, id){rest};"
                    )
            elif table.placement is D and column_d not in [c.strip() for c in columns.split(",")]:
                keys.append(f"ALTER TABLE {db_table} DROP CONSTRAINT {name};")
                change = by_name.get(name)
                if change is not None and change.sql:
                    keys += change.sql
                else:
                    verb = "PRIMARY KEY" if kind == "p" else "UNIQUE"
                    keys.append(f"ALTER TABLE {db_table} ADD CONSTRAINT {name} {verb} ({column_d}, {columns});")
        if table.placement is D:
            for name, definition in _unique_indexes(db_table):
                head, tail = definition.split(" (", 1)
                if not tail.startswith(f"{column_d},"):
                    keys.append(f"DROP INDEX {name};")
                    keys.append(f"{head} ({column_d}, {tail};")
    root = table_of[ROOT]
    citus = [f"SELECT create_reference_table('{t}');" for t in _in_dependency_order(table_of, R, found)]
    citus.append(f"SELECT create_distributed_table('{root}', 'id');")
    citus.append("SELECT create_distributed_table('chats_conversation_key', 'external_id_digest');")
    citus += [
        f"SELECT create_distributed_table('{t}', '{CONVERSATION_COLUMN}', colocate_with => '{root}');"
        for t in _in_dependency_order(table_of, D, found)
        if t != root
    ]
    citus += [f"SELECT citus_add_local_table_to_metadata('{t}');" for t in _in_dependency_order(table_of, L, found)]
    return Ddl(constraints=[*drop_fks, *keys, *add_fks], citus=citus)


def _constraint_name(model: type[models.Model], name: str) -> str:
    """The database's name of a unique field's constraint (PostgreSQL's <table>_<column>_key), else `name`."""
    if _is_fk(model, name) or any(f.name == name and f.unique for f in model._meta.concrete_fields):
        return f"{model._meta.db_table}_{_column(model, name)}_key"
    return name


def _is_fk(model: type[models.Model], name: str) -> bool:
    try:
        return model._meta.get_field(name).is_relation
    except Exception:
        return False


def _in_dependency_order(table_of: dict[str, str], placement: Placement, found: dict[str, Any]) -> list[str]:
    """The tables of one placement, each after the tables of that placement it points at (then by name)."""
    labels = sorted((label for label in table_of if TABLES[label].placement is placement), key=table_of.__getitem__)
    done: list[str] = []

    def visit(label: str, path: tuple[str, ...]) -> None:
        if label in done or label in path:
            return
        for f in found[label]._meta.concrete_fields:
            target = f.related_model._meta.label if f.is_relation and f.related_model is not None else None
            if target in labels and target != label:
                visit(target, (*path, label))
        done.append(label)

    for label in labels:
        visit(label, ())
    return [table_of[label] for label in done]
