"""Full-text search (chats/selectors/search.py) on PostgreSQL: a conversation is searched as one text (its words'
combination decided per conversation) while each message keeps its own vector, built as it is stored; a phrase is
matched within one message. Both ways a search is planned (few matches read by id, many walked by time) answer
the same. The match count on the list page is in tests/test_filters.py, the query parser in tests/test_tsquery.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from chats.models import Conversation, Source
from chats.search_schema import search_schema_apply
from chats.selectors import search
from tests import factories

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def chat(source: Source, name: str, *texts: str, title: str = "") -> Conversation:
    roles = ["user", "assistant"]
    document: dict[str, Any] = {
        "chat_id": name,
        "model": "qwen3.5-flash",
        "main_messages": [{"role": roles[n % 2], "content": text} for n, text in enumerate(texts)],
    }
    if title:
        document["title"] = title
    return factories.ingest(source, document, format="chat_document")


@pytest.fixture
def library(source: Source) -> Source:
    chat(source, "pcr", "How do I set the annealing temperature?", "Use a gradient on the thermocyclers.")
    chat(source, "blot", "The annealing step went fine.", "Transfer onto nitrocellulose next.")
    chat(source, "split", "Which annealing buffer?", "Temperature matters less than salt.")
    chat(source, "titled", "Nothing to see here.", title="Photobleaching in confocal runs")
    return source


def found(value: str) -> set[str]:
    matches, _ = search.full_text_matches(Conversation.objects.all(), value)
    return {c.external_id for c in matches}


@pytest.fixture(params=[2000, 1, 0], ids=["read-by-id", "walked-by-time", "common-by-statistics"])
def planned(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Each plan: a probe that reads every word's matches, one too small for any, which walks the list, or none at
    all: with the table analysed, PostgreSQL's statistics put every word in more messages than a probe of 0
    reads, so no word's messages are read and the list is walked."""
    limit: int = request.param
    monkeypatch.setattr(search, "SEARCH_PROBE_LIMIT", limit)
    if limit == 0:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE chats_message")
    return limit


def test_words_in_different_messages_of_one_conversation_match_it_together(library: Source, planned: int) -> None:
    assert found("annealing thermocycler") == {"pcr"}  # stemmed, and in two messages
    assert found("annealing nitrocellulose") == {"blot"}


def test_an_excluded_word_excludes_the_conversation_whichever_message_holds_it(library: Source, planned: int) -> None:
    assert found("annealing -nitrocellulose") == {"pcr", "split"}
    assert found("-annealing") == {"titled"}


def test_alternatives_match_either(library: Source, planned: int) -> None:
    assert found("thermocycler OR nitrocellulose") == {"pcr", "blot"}


def test_a_phrase_is_matched_within_one_message(library: Source, planned: int) -> None:
    assert found('"annealing temperature"') == {"pcr"}  # "split" has both words, in two messages


def test_the_title_is_searched_with_the_messages(library: Source, planned: int) -> None:
    assert found("photobleaching") == {"titled"}
    assert found("photobleaching nothing") == {"titled"}  # one word in the title, one in a message


def test_a_query_of_stop_words_alone_finds_nothing(library: Source) -> None:
    matches, count = search.full_text_matches(Conversation.objects.all(), "the and of")
    assert list(matches) == [] and count == search.BoundedCount(0, more=False)


def test_the_count_is_exact_when_the_probe_reads_every_match(library: Source) -> None:
    _, count = search.full_text_matches(Conversation.objects.all(), "annealing -nitrocellulose")
    assert count == search.BoundedCount(2, more=False)


def test_past_the_probe_one_common_word_is_counted_as_more_than(
    library: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "SEARCH_PROBE_LIMIT", 2)
    matches, count = search.full_text_matches(Conversation.objects.all(), "annealing")
    assert count == search.BoundedCount(2, more=True)
    assert {c.external_id for c in matches} == {"pcr", "blot", "split"}


def test_past_the_probe_a_combination_is_left_to_the_list_to_count(
    library: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "More than" is only sure for one word (or alternatives): an exclusion may leave fewer than the probe read."""
    monkeypatch.setattr(search, "SEARCH_PROBE_LIMIT", 1)
    matches, count = search.full_text_matches(Conversation.objects.all(), "annealing -nitrocellulose")
    assert count is None and {c.external_id for c in matches} == {"pcr", "split"}


def test_a_word_the_statistics_put_in_more_messages_than_a_probe_reads_is_not_probed(
    library: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its index scan could not stop at the probe's LIMIT: it would read every matching message first."""
    monkeypatch.setattr(search, "SEARCH_PROBE_LIMIT", 0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chats_message")
    with CaptureQueriesContext(connection) as queries:
        assert found("annealing") == {"pcr", "blot", "split"}
    probes = [q["sql"] for q in queries.captured_queries if "SELECT m.conversation_id FROM chats_message m" in q["sql"]]
    assert probes == []
    assert any(q["sql"].startswith("EXPLAIN") for q in queries.captured_queries)


def test_a_search_reads_only_the_callers_conversations(
    library: Source, other_source: Source, ingest_client: APIClient, other_ingest_key: str
) -> None:
    chat(other_source, "elsewhere", "annealing thermocycler notes")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")

    def listed(client: APIClient) -> set[str]:
        response = client.get("/api/v1/conversations/", {"q": "annealing thermocycler"})
        assert response.status_code == 200, response.content
        return {row["external_id"] for row in response.json()["results"]}

    assert listed(ingest_client) == {"pcr"}
    assert listed(other) == {"elsewhere"}


def test_a_message_is_indexed_up_to_the_configured_cap(source: Source) -> None:
    search_schema_apply(connection, 100)  # as migrate does when MASTERBRAIN_SEARCH_MESSAGE_CHARS changes
    try:
        chat(source, "long", "lead " * 30 + "centrifugation")  # the word starts past the 100th character
        assert found("lead") == {"long"} and found("centrifugation") == set()
    finally:
        search_schema_apply(connection, 20_000)
    chat(source, "after", "lead " * 30 + "centrifugation")
    assert found("centrifugation") == {"after"}


def test_a_long_query_is_decided_by_walking_the_list_and_an_overlong_one_is_refused(
    api_client: APIClient, auditor: Any, library: Source
) -> None:
    api_client.force_login(auditor)
    words = " OR ".join(["annealing", *(f"w{n}" for n in range(search.MAX_PROBED_TERMS + 5))])
    response = api_client.get("/api/v1/conversations/", {"q": words})
    assert response.status_code == 200
    assert {row["external_id"] for row in response.json()["results"]} == {"pcr", "blot", "split"}
    assert api_client.get("/api/v1/conversations/", {"q": "x" * 501}).status_code == 400


# --------------------------------------------------------------------------------------------------------------
# The answers are those of one vector over the whole conversation, as search was before vectors were per message


VOCABULARY = ["gel", "buffer", "primer", "agarose", "ladder", "stain", "photobleaching", "nitrocellulose"]


@pytest.fixture
def mixed(source: Source) -> Source:
    """Conversations holding the vocabulary's words in various messages (and titles)."""
    for n in range(12):
        words = [w for i, w in enumerate(VOCABULARY) if (n >> (i % 4)) & 1 and (i + n) % 3]
        messages = [" ".join(words[k::2]) or "nothing" for k in range(2)]
        chat(source, f"c{n}", *messages, title=VOCABULARY[n % len(VOCABULARY)] if n % 4 == 0 else "")
    return source


def as_one_vector(value: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.external_id FROM chats_conversation c
            WHERE to_tsvector('english', coalesce(c.title, '') || ' ' || coalesce((SELECT string_agg(m.text, ' '
                  ORDER BY m.position) FROM chats_message m WHERE m.conversation_id = c.id), ''))
                  @@ websearch_to_tsquery('english', %s)
            """,
            [value],
        )
        return {row[0] for row in cursor.fetchall()}


word = st.sampled_from(VOCABULARY)
clause = st.lists(st.tuples(st.booleans(), word), min_size=1, max_size=3).map(
    lambda terms: " ".join(("-" if negated else "") + w for negated, w in terms)
)
web_query = st.lists(clause, min_size=1, max_size=3).map(" OR ".join)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=web_query, limit=st.sampled_from([2000, 3, 1]))
def test_every_query_without_phrases_answers_as_one_vector_over_the_conversation(
    mixed: Source, value: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "SEARCH_PROBE_LIMIT", limit)
    assert found(value) == as_one_vector(value)
