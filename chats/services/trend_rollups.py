"""The Trends rollups (chats.models.trends) kept right: after an ingestion or a feedback write commits, the
(day, source) keys its conversations were and are under are recomputed from the rows, whole (never incremented),
so that a recomputation is idempotent and a missed one is repaired by the next of the same key or by
`manage.py rollup_trends`.

Concurrent recomputations of one key are serialized by a transaction-scoped advisory lock taken in key order:
the later one reads, after the earlier committed, every row both saw.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction

from chats.models import Score, TrendFigure

logger = logging.getLogger(__name__)

Key = tuple[dt.date, int]  # (day, source id)

# The conversations of the keys (a temporary table's worth of rows: one day of one source each).
_CONVERSATIONS = """
    WITH keys AS (SELECT * FROM unnest(%(days)s::date[], %(sources)s::bigint[]) AS k(day, source_id)),
    conv AS (
        SELECT c.id, k.day, c.source_id, c.model_name, c.workflow, c.message_count, c.policy_violation
        FROM keys k JOIN chats_conversation c ON c.source_id = k.source_id
         AND c.last_activity_at >= k.day::timestamp AT TIME ZONE 'UTC'
         AND c.last_activity_at < (k.day + 1)::timestamp AT TIME ZONE 'UTC'
    )
"""

_DAYS = (
    _CONVERSATIONS
    + """,
    fb AS (
        SELECT f.conversation_id, count(f.score) AS n, coalesce(sum(f.score), 0) AS total,
               bool_or(f.score = %(down)s) AS has_down
        FROM chats_feedback f WHERE f.conversation_id IN (SELECT id FROM conv) AND f.score IS NOT NULL
        GROUP BY f.conversation_id
    )
    INSERT INTO chats_trendday
        (day, source_id, model_name, workflow, conversations, messages, scored, down, score_sum, score_count)
    SELECT conv.day, conv.source_id, conv.model_name, conv.workflow, count(*), coalesce(sum(conv.message_count), 0),
           count(fb.conversation_id), count(*) FILTER (WHERE fb.has_down),
           coalesce(sum(fb.total), 0), coalesce(sum(fb.n), 0)
    FROM conv LEFT JOIN fb ON fb.conversation_id = conv.id
    GROUP BY conv.day, conv.source_id, conv.model_name, conv.workflow
"""
)

_TALLIES = (
    _CONVERSATIONS
    + """
    INSERT INTO chats_trendtally (day, source_id, figure, name, conversations)
    SELECT day, source_id, figure, name, count(DISTINCT id) FROM (
        SELECT conv.day, conv.source_id, %(unanswered)s AS figure, t.name, conv.id
        FROM conv JOIN chats_toolcall t ON t.conversation_id = conv.id WHERE t.result_message_id IS NULL
        UNION ALL
        SELECT conv.day, conv.source_id, %(invalid)s, t.name, conv.id
        FROM conv JOIN chats_toolcall t ON t.conversation_id = conv.id WHERE t.arguments_error <> ''
        UNION ALL
        SELECT conv.day, conv.source_id, %(orphans)s, '', conv.id
        FROM conv JOIN chats_message m ON m.conversation_id = conv.id WHERE m.is_orphan_result
        UNION ALL
        SELECT conv.day, conv.source_id, %(violations)s, a.kind, conv.id
        FROM conv JOIN chats_injectedartifact a ON a.conversation_id = conv.id WHERE conv.policy_violation
    ) flagged
    GROUP BY day, source_id, figure, name
"""
)


def _params(keys: Sequence[Key]) -> dict[str, Any]:
    return {
        "days": [day for day, _ in keys],
        "sources": [source for _, source in keys],
        "down": Score.DOWN.value,
        "unanswered": TrendFigure.UNANSWERED.value,
        "invalid": TrendFigure.INVALID_ARGUMENTS.value,
        "orphans": TrendFigure.ORPHANS.value,
        "violations": TrendFigure.VIOLATIONS.value,
    }


def rollup_keys(keys: Iterable[Key]) -> None:
    """Recompute the rollups of these (day, source) keys from the rows, in one transaction."""
    ordered = sorted(set(keys))
    if not ordered:
        return
    params = _params(ordered)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT pg_advisory_xact_lock(h) FROM (
                SELECT DISTINCT hashtextextended('trends ' || day::text || ' ' || source_id::text, 0) AS h
                FROM unnest(%(days)s::date[], %(sources)s::bigint[]) AS k(day, source_id) ORDER BY h
            ) locks
            """,
            params,
        )
        for table in ("chats_trendday", "chats_trendtally"):
            cursor.execute(
                f"DELETE FROM {table} t USING unnest(%(days)s::date[], %(sources)s::bigint[]) AS k(day, source_id) "
                "WHERE t.day = k.day AND t.source_id = k.source_id",
                params,
            )
        cursor.execute(_DAYS, params)
        cursor.execute(_TALLIES, params)


def trends_rollup(conversation_ids: Sequence[int]) -> None:
    """Recompute the keys these conversations were rolled up under and are under now, and record the new ones."""
    ids = sorted(set(conversation_ids))
    if not ids:
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT day, source_id FROM chats_trendmember WHERE conversation_id = ANY(%s) "
            "ORDER BY conversation_id FOR UPDATE",
            [ids],
        )
        keys: set[Key] = {(day, source) for day, source in cursor.fetchall()}
        cursor.execute(
            "SELECT id, (last_activity_at AT TIME ZONE 'UTC')::date, source_id FROM chats_conversation "
            "WHERE id = ANY(%s)",
            [ids],
        )
        now = cursor.fetchall()
        keys.update((day, source) for _, day, source in now)
        rollup_keys(keys)
        cursor.execute(
            """
            INSERT INTO chats_trendmember (conversation_id, day, source_id)
            SELECT * FROM unnest(%s::bigint[], %s::date[], %s::bigint[])
            ON CONFLICT (conversation_id) DO UPDATE SET day = EXCLUDED.day, source_id = EXCLUDED.source_id
            """,
            [[pk for pk, _, _ in now], [day for _, day, _ in now], [source for _, _, source in now]],
        )
        gone = sorted(set(ids) - {pk for pk, _, _ in now})
        if gone:
            cursor.execute("DELETE FROM chats_trendmember WHERE conversation_id = ANY(%s)", [gone])


def trends_rollup_soon(conversation_ids: Sequence[int]) -> None:
    """Recompute these conversations' rollups once the current transaction commits (at once outside one). A
    failure is logged, never the write's: the next write of the same day and source, or `manage.py rollup_trends`,
    puts it right."""
    ids = list(conversation_ids)
    if ids:
        transaction.on_commit(lambda: trends_rollup(ids), robust=True)


def trends_rollup_all() -> int:
    """Rebuild every rollup from the rows (after a bulk load, or to repair); how many (day, source) keys."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE chats_trendday, chats_trendtally, chats_trendmember IN EXCLUSIVE MODE")
        cursor.execute("SELECT DISTINCT (last_activity_at AT TIME ZONE 'UTC')::date, source_id FROM chats_conversation")
        keys: list[Key] = [(day, source) for day, source in cursor.fetchall()]
        for table in ("chats_trendday", "chats_trendtally", "chats_trendmember"):
            cursor.execute(f"DELETE FROM {table}")  # not TRUNCATE: a transaction's deferred checks may be pending
        rollup_keys(keys)
        cursor.execute(
            "INSERT INTO chats_trendmember (conversation_id, day, source_id) "
            "SELECT id, (last_activity_at AT TIME ZONE 'UTC')::date, source_id FROM chats_conversation"
        )
        return len(keys)
