"""Full-text search over conversations (PostgreSQL): the GIN-indexed vectors, and the text of conversations the
indexer has not reached yet, read as the indexer would read it."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery
from django.db import connections
from django.db.models import Q, QuerySet

from chats.models import SEARCH_DOCUMENT_SQL, SEARCH_TEXT_LIMIT, Conversation

# A search first reads up to this many of its matches from the GIN index (see full_text_matches).
SEARCH_PROBE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class BoundedCount:
    """A count read up to a bound: exact when ``more`` is false, else only "more than ``count``"."""

    count: int
    more: bool


def full_text_matches(queryset: QuerySet[Conversation], value: str) -> tuple[QuerySet[Conversation], BoundedCount]:
    """Conversations whose stored vector (`chats.services.search.search_index`) matches a web-style query, and the
    stale ones (ingested since the indexer last ran) whose text does, read from their messages as the indexer would.

    The page wants the newest matches first, and the best plan depends on how many there are, which the planner
    misjudges: words cluster in time, so walking the time index and testing each row's (large, compressed) vector
    can read tens of thousands of rows for a word that is rare among recent conversations. So the matches are
    counted first, up to SEARCH_PROBE_LIMIT, through the GIN index. When that is all of them, the page reads
    exactly those rows by primary key and sorts them (the ids are wrapped in a subquery so that the planner
    cannot turn back to the time index). When there are more, the word is common enough that walking the time
    index finds a page of matches quickly.

    The probe is also how many conversations match (with the other filters): exact up to SEARCH_PROBE_LIMIT,
    "more than" past it, at no cost of its own (an exact count(*) of a common word would read every match).
    """
    query = SearchQuery(value, config="english", search_type="websearch")
    # Both probes read only what the caller may see (``queryset`` is scoped to it, and filtered): neither their
    # answers nor their timing say anything about other sources' conversations.
    stale = _stale_matches(queryset, value)
    ids = _probe(queryset.filter(search_vector=query).order_by().values_list("id", flat=True)[: SEARCH_PROBE_LIMIT + 1])
    if len(ids) <= SEARCH_PROBE_LIMIT:
        matches = sorted(set(ids) | set(stale))
        found = queryset.extra(
            where=["chats_conversation.id = ANY(ARRAY(SELECT unnest(%s::bigint[])))"],
            params=[matches],
        )
        return found, BoundedCount(len(matches), more=False)
    return queryset.filter(Q(search_vector=query) | Q(id__in=stale)), BoundedCount(SEARCH_PROBE_LIMIT, more=True)


def _probe(ids: QuerySet[Conversation, int]) -> list[int]:
    """The ids of a search's probe, read through the GIN index of the vectors.

    The planner may prefer a sequential scan that stops once it has its LIMIT: on its costs the two are close for
    a word in a tenth of the conversations, and the index's pending list (the entries the indexer added since the
    last vacuum) tips it. But the scan unpacks every row's vector, and takes 60-160 ms at 50,000 conversations
    where the index takes 3-25 ms (bench P4). So the probe is planned without sequential scans, for this statement
    alone: SET LOCAL in the same round trip (one implicit transaction, or the request's own, where the setting is
    put back right after)."""
    sql, params = ids.query.sql_with_params()
    with connections[ids.db].cursor() as cursor:
        cursor.execute(f"SET LOCAL enable_seqscan = off; {sql}; SET LOCAL enable_seqscan TO DEFAULT", params)
        cursor.nextset()
        return [row[0] for row in cursor.fetchall()]


def _stale_matches(queryset: QuerySet[Conversation], value: str) -> list[int]:
    """The stale conversations of ``queryset`` whose text matches: the indexer's own text and vector, computed for
    them alone (through the partial index on stale rows, so the cost follows the indexer's backlog, not the
    table)."""
    scope, params = queryset.filter(search_stale=True).order_by().values("id").query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id FROM chats_conversation c
            WHERE c.search_stale AND c.id IN ({scope})
              AND {SEARCH_DOCUMENT_SQL} @@ websearch_to_tsquery('english', %s)
            """,
            [*params, SEARCH_TEXT_LIMIT, value],
        )
        return [row[0] for row in cursor.fetchall()]
