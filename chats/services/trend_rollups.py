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

from chats.models import Conversation, Score, TrendDay, TrendFigure, TrendMember, TrendTally

logger = logging.getLogger(__name__)

Key = tuple[dt.date, int]  # (day, source id)

# The conversations of one key: a day of one source (bounds in UTC), portable SQL (PostgreSQL, and SQLite for
# `make run`).
_CONVERSATIONS = """
    WITH conv AS (
        SELECT c.id, c.model_name, c.workflow, c.message_count, c.policy_violation
        FROM chats_conversation c
        WHERE c.source_id = %(source)s AND c.last_activity_at >= %(since)s AND c.last_activity_at < %(until)s
    )
"""

_DAYS = (
    _CONVERSATIONS
    + """,
    fb AS (
        SELECT f.conversation_id, count(f.score) AS n, coalesce(sum(f.score), 0) AS total,
               max(CASE WHEN f.score = %(down)s THEN 1 ELSE 0 END) AS has_down
        FROM chats_feedback f WHERE f.conversation_id IN (SELECT id FROM conv) AND f.score IS NOT NULL
        GROUP BY f.conversation_id
    )
    INSERT INTO chats_trendday
        (day, source_id, model_name, workflow, conversations, messages, scored, down, score_sum, score_count)
    SELECT %(day)s, %(source)s, conv.model_name, conv.workflow, count(*), coalesce(sum(conv.message_count), 0),
           count(fb.conversation_id), coalesce(sum(fb.has_down), 0),
           coalesce(sum(fb.total), 0), coalesce(sum(fb.n), 0)
    FROM conv LEFT JOIN fb ON fb.conversation_id = conv.id
    GROUP BY conv.model_name, conv.workflow
"""
)

_TALLIES = (
    _CONVERSATIONS
    + """
    INSERT INTO chats_trendtally (day, source_id, figure, name, conversations)
    SELECT %(day)s, %(source)s, figure, name, count(DISTINCT id) FROM (
        SELECT %(unanswered)s AS figure, t.name AS name, conv.id AS id
        FROM conv JOIN chats_toolcall t ON t.conversation_id = conv.id WHERE t.result_message_id IS NULL
        UNION ALL
        SELECT %(invalid)s, t.name, conv.id
        FROM conv JOIN chats_toolcall t ON t.conversation_id = conv.id WHERE t.arguments_error <> ''
        UNION ALL
        SELECT %(orphans)s, '', conv.id
        FROM conv JOIN chats_message m ON m.conversation_id = conv.id WHERE m.is_orphan_result
        UNION ALL
        SELECT %(violations)s, a.kind, conv.id
        FROM conv JOIN chats_injectedartifact a ON a.conversation_id = conv.id WHERE conv.policy_violation
    ) flagged
    GROUP BY figure, name
"""
)


def _params(key: Key) -> dict[str, Any]:
    day, source = key
    since = dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)
    ops = connection.ops
    return {
        "day": ops.adapt_datefield_value(day),
        "source": source,
        "since": ops.adapt_datetimefield_value(since),
        "until": ops.adapt_datetimefield_value(since + dt.timedelta(days=1)),
        "down": Score.DOWN.value,
        "unanswered": TrendFigure.UNANSWERED.value,
        "invalid": TrendFigure.INVALID_ARGUMENTS.value,
        "orphans": TrendFigure.ORPHANS.value,
        "violations": TrendFigure.VIOLATIONS.value,
    }


def _day_of(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


def rollup_keys(keys: Iterable[Key]) -> None:
    """Recompute the rollups of these (day, source) keys from the rows, in one transaction."""
    ordered = sorted(set(keys))
    if not ordered:
        return
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # SQLite runs one writer at a time anyway
            for day, source in ordered:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"trends {day} {source}"])
        for key in ordered:
            params = _params(key)
            for table in ("chats_trendday", "chats_trendtally"):
                cursor.execute(f"DELETE FROM {table} WHERE day = %(day)s AND source_id = %(source)s", params)
            cursor.execute(_DAYS, params)
            cursor.execute(_TALLIES, params)


def trends_rollup(conversation_ids: Sequence[int]) -> None:
    """Recompute the keys these conversations were rolled up under and are under now, and record the new ones."""
    ids = sorted(set(conversation_ids))
    if not ids:
        return
    with transaction.atomic():
        members = TrendMember.objects.filter(conversation_id__in=ids).order_by("conversation_id")
        if connection.features.has_select_for_update:
            members = members.select_for_update()
        keys: set[Key] = {(day, source) for day, source in members.values_list("day", "source_id")}
        now = {
            pk: (_day_of(moment), source)
            for pk, moment, source in Conversation.objects.filter(pk__in=ids).values_list(
                "pk", "last_activity_at", "source_id"
            )
        }
        keys.update(now.values())
        rollup_keys(keys)
        TrendMember.objects.filter(conversation_id__in=ids).delete()
        TrendMember.objects.bulk_create(
            [TrendMember(conversation_id=pk, day=day, source_id=source) for pk, (day, source) in now.items()]
        )


def trends_rollup_soon(conversation_ids: Sequence[int]) -> None:
    """Recompute these conversations' rollups once the current transaction commits (at once outside one). A
    failure is logged, never the write's: the next write of the same day and source, or `manage.py rollup_trends`,
    puts it right."""
    ids = list(conversation_ids)
    if ids:
        transaction.on_commit(lambda: trends_rollup(ids), robust=True)


def trends_rollup_all() -> int:
    """Rebuild every rollup from the rows (after a bulk load, or to repair); how many (day, source) keys."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("LOCK TABLE chats_trendday, chats_trendtally, chats_trendmember IN EXCLUSIVE MODE")
        rows = Conversation.objects.values_list("pk", "last_activity_at", "source_id").iterator(chunk_size=5000)
        members = [
            TrendMember(conversation_id=pk, day=_day_of(moment), source_id=source) for pk, moment, source in rows
        ]
        # Not TRUNCATE: a transaction's deferred checks may be pending.
        for model in (TrendDay, TrendTally, TrendMember):
            model.objects.all().delete()
        keys = {(member.day, member.source_id) for member in members}
        rollup_keys(keys)
        TrendMember.objects.bulk_create(members, batch_size=5000)
        return len(keys)
