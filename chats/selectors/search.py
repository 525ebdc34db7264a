"""Full-text search over conversations (PostgreSQL), through the messages' own vectors and the titles'.

Each message's vector is built as the message is stored (chats.search_schema), so everything stored is found, and
a conversation is searched as one text: its words' boolean combination is decided per conversation, each word (or
phrase) per message (chats.tsquery).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import QuerySet

from chats import tsquery
from chats.models import Conversation
from chats.search_schema import CONFIG

# A search first reads up to this many of its matches from the GIN indexes (see full_text_matches).
SEARCH_PROBE_LIMIT = 2000
# ... reading at most MESSAGE_PROBE_FACTOR times as many matching messages for each word: a word in more is
# common enough that walking the list's time index finds a page of matches quickly.
MESSAGE_PROBE_FACTOR = 5
# A query of more distinct words (or phrases) than this is not probed word by word: the list is walked, each
# conversation decided from its messages, so that the work stays linear in the query's length.
MAX_PROBED_TERMS = 16


@dataclass(frozen=True, slots=True)
class BoundedCount:
    """A count read up to a bound: exact when ``more`` is false, else only "more than ``count``"."""

    count: int
    more: bool


@dataclass(frozen=True, slots=True)
class _Probe:
    """The conversations (of the caller's scope) that have a term, read from the GIN indexes: all of them when
    ``complete``, else some of them (the term is in more than SEARCH_PROBE_LIMIT conversations, or in more than
    MESSAGE_PROBE_FACTOR times as many messages)."""

    ids: frozenset[int]
    complete: bool


def full_text_matches(
    queryset: QuerySet[Conversation], value: str
) -> tuple[QuerySet[Conversation], BoundedCount | None]:
    """Conversations of ``queryset`` that match a web-style query, and how many do (None: not counted here).

    The page wants the newest matches first, and the best plan depends on how many there are, which the planner
    misjudges: words cluster in time, so walking the time index and testing each conversation can read tens of
    thousands of rows for a word that is rare among recent conversations. So each word's conversations are read
    first through the GIN indexes, up to a bound. When a word (or a set of words every match must have one of)
    bounds the candidates, the query is decided for exactly those, and the page reads them by primary key and
    sorts them (the ids are wrapped in a subquery so that the planner cannot turn back to the time index); the
    count is exact. Otherwise the words are common enough that walking the time index, deciding each
    conversation from its messages, finds a page of matches quickly.

    Every probe reads only what the caller may see (``queryset`` is scoped to it, and filtered): neither the
    answers nor their timing say anything about other sources' conversations.
    """
    connection = connections[queryset.db]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT websearch_to_tsquery('{CONFIG}', %s)::text", [value])
        row = cursor.fetchone()
    tree = tsquery.parse(row[0] if row else "")
    if tree is None:  # only stop words: nothing to find
        return queryset.none(), BoundedCount(0, more=False)
    if len(list(tsquery.terms(tree))) > MAX_PROBED_TERMS:
        sql, params = _decided_sql(tree)
        return queryset.extra(where=[sql], params=params), None  # noqa: S610  # the SQL is ours; terms are parameters
    probes: dict[tsquery.Term, _Probe] = {}

    def probe(term: tsquery.Term) -> _Probe:
        if term not in probes:
            probes[term] = _term_probe(queryset, term)
        return probes[term]

    def size(term: tsquery.Term) -> int:
        found = probe(term)
        return len(found.ids) if found.complete else SEARCH_PROBE_LIMIT * (MESSAGE_PROBE_FACTOR + 1) + len(found.ids)

    candidates = tsquery.cover(tree, size)
    if candidates is not None and all(probe(term).complete for term in candidates):
        ids = frozenset().union(*(probe(term).ids for term in candidates))
        having = {term: _term_within(queryset, term, probes.get(term), ids) for term in tsquery.terms(tree)}
        matches = sorted(i for i in ids if _holds(tree, having, i))
        found = queryset.extra(
            where=["chats_conversation.id = ANY(ARRAY(SELECT unnest(%s::bigint[])))"],
            params=[matches],
        )
        return found, BoundedCount(len(matches), more=False)
    sql, params = _decided_sql(tree)
    walked = queryset.extra(where=[sql], params=params)  # noqa: S610  # the SQL is ours; the terms are parameters
    if tsquery.is_monotone_union(tree) and any(len(found.ids) > SEARCH_PROBE_LIMIT for found in probes.values()):
        # One of its terms alone is in more conversations than the probe reads.
        return walked, BoundedCount(SEARCH_PROBE_LIMIT, more=True)
    return walked, None


def _holds(tree: tsquery.Node, having: dict[tsquery.Term, frozenset[int]], conversation: int) -> bool:
    return tsquery.holds(tree, lambda term: conversation in having[term])


def _term_probe(queryset: QuerySet[Conversation], term: tsquery.Term) -> _Probe:
    """The conversations of ``queryset`` whose title or some message matches ``term``, up to the bounds.

    A term that PostgreSQL's statistics of the message vectors (ANALYZE's most common elements) put in more
    messages than the probe would read is not read at all: its index scan cannot stop at a LIMIT (a bitmap of
    every matching message is built first, 100-150 ms for a word in a quarter of a million messages), and the
    probe would end incomplete anyway."""
    scope, params = queryset.order_by().values("id").query.sql_with_params()
    message_limit = SEARCH_PROBE_LIMIT * MESSAGE_PROBE_FACTOR
    if _estimated_messages(queryset.db, term, scope, params) > message_limit:
        rows: list[int] = []
        common = True
    else:
        rows = _without_seqscan(
            queryset.db,
            f"""
            SELECT m.conversation_id FROM chats_message m
            WHERE m.search_vector @@ %s::tsquery AND m.conversation_id IN ({scope})
            LIMIT {message_limit + 1}
            """,
            [term.query, *params],
        )
        common = len(rows) > message_limit
    titles = _without_seqscan(
        queryset.db,
        f"SELECT c.id FROM chats_conversation c WHERE c.title_vector @@ %s::tsquery AND c.id IN ({scope}) "
        f"LIMIT {SEARCH_PROBE_LIMIT + 1}",
        [term.query, *params],
    )
    ids = frozenset(rows) | frozenset(titles)
    return _Probe(ids, complete=not common and len(ids) <= SEARCH_PROBE_LIMIT)


def _estimated_messages(alias: str, term: tsquery.Term, scope: str, params: tuple[Any, ...]) -> float:
    """How many of the caller's messages (``scope``: their conversations' ids) the planner expects ``term`` in: one
    EXPLAIN, no rows read."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM chats_message m "
            f"WHERE m.search_vector @@ %s::tsquery AND m.conversation_id IN ({scope})",
            [term.query, *params],
        )
        row = cursor.fetchone()
    plan = json.loads(row[0]) if row and isinstance(row[0], str) else (row[0] if row else None)
    if not isinstance(plan, list) or not plan:
        return 0.0
    return float(plan[0]["Plan"]["Plan Rows"])


def _term_within(
    queryset: QuerySet[Conversation], term: tsquery.Term, found: _Probe | None, ids: frozenset[int]
) -> frozenset[int]:
    """Which of ``ids`` have ``term``: the probe's answer when it read them all, else read for those alone."""
    if found is not None and found.complete:
        return found.ids & ids
    scope, params = queryset.order_by().values("id").query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(
            f"""
            SELECT m.conversation_id FROM chats_message m
            WHERE m.conversation_id = ANY(%s) AND m.search_vector @@ %s::tsquery AND m.conversation_id IN ({scope})
            UNION
            SELECT c.id FROM chats_conversation c
            WHERE c.id = ANY(%s) AND c.title_vector @@ %s::tsquery AND c.id IN ({scope})
            """,
            [list(ids), term.query, *params, list(ids), term.query, *params],
        )
        return frozenset(row[0] for row in cursor.fetchall())


def _decided_sql(node: tsquery.Node) -> tuple[str, list[str]]:
    """The query as a condition on a row of chats_conversation: each term tested on its title and messages.

    Each message test is a subquery run for the conversation at hand, through the messages' (conversation,
    position) index: the walk stops after a page of matches. ``OFFSET 0`` keeps it so: without it the planner may
    turn the subquery into a hashed one built from every message the term is in (or every message, when it
    judges the term common), which reads the whole table once per search, seconds at a million messages."""
    if isinstance(node, tsquery.Term):
        return (
            "(chats_conversation.title_vector @@ %s::tsquery OR EXISTS (SELECT 1 FROM chats_message m "
            "WHERE m.conversation_id = chats_conversation.id AND m.search_vector @@ %s::tsquery OFFSET 0))",
            [node.query, node.query],
        )
    if isinstance(node, tsquery.Not):
        sql, params = _decided_sql(node.operand)
        return f"(NOT {sql})", params
    parts = [_decided_sql(operand) for operand in node.operands]
    joiner = " AND " if isinstance(node, tsquery.And) else " OR "
    return "(" + joiner.join(sql for sql, _ in parts) + ")", [p for _, params in parts for p in params]


def _without_seqscan(alias: str, sql: str, params: list[Any]) -> list[int]:
    """The ids a probe reads, through the GIN indexes.

    The planner may prefer a sequential scan that stops once it has its LIMIT: on its costs the two are close for
    a word in a tenth of the rows, and the index's pending list (the entries added since the last vacuum) tips
    it. But the scan unpacks every row's vector, and takes tens to hundreds of milliseconds where the index takes
    a few. So the probe is planned without sequential scans, for this statement alone: SET LOCAL in the same
    round trip (one implicit transaction, or the request's own, where the setting is put back right after)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SET LOCAL enable_seqscan = off; {sql}; SET LOCAL enable_seqscan TO DEFAULT", params)
        cursor.nextset()
        return [row[0] for row in cursor.fetchall()]
