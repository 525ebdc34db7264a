"""The conversation list's selectors (chats/selectors/conversations.py) at scale: how many conversations wait for
their search vectors (not_indexed_count, said on the list page and in the API's X-Search-Not-Indexed header, scoped
to the caller). The list page itself is tested in tests/test_views.py, the filters and the search's match count in
tests/test_filters.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from chats.models import Conversation, Source
from chats.selectors import conversations as selectors
from chats.selectors.search import BoundedCount
from chats.services.search import search_index_stale
from tests import factories

NOTICE = re.compile(r'<p class="muted small" id="not-indexed">(.*?)</p>', re.S)


@pytest.fixture
def indexed_later(settings: Any) -> None:
    """Ingestion leaves the vectors to `manage.py index_search`, as with MASTERBRAIN_SEARCH_INDEXER=command: what it
    stores stays stale until search_index_stale() runs."""
    settings.MASTERBRAIN_SEARCH_INDEXER = "command"


def _notice(client: Client) -> str | None:
    response = client.get("/conversations/")
    assert response.status_code == 200
    found = NOTICE.search(response.content.decode())
    return found.group(1) if found else None


def _header(client: APIClient) -> str:
    response = client.get("/api/v1/conversations/")
    assert response.status_code == 200
    value: str = response["X-Search-Not-Indexed"]
    return value


# --------------------------------------------------------------------------------------------------------------
# Not indexed yet


def test_the_list_says_how_many_conversations_are_not_indexed_yet_until_they_are(
    client: Client, reviewer: User, source: Source, indexed_later: None
) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    factories.make_conversation(source, n_messages=2)
    assert Conversation.objects.filter(search_stale=True).count() == 2

    assert _notice(client) == (
        "2 conversations are not indexed for search yet: search reads their messages directly until they are."
    )

    search_index_stale()
    assert _notice(client) is None


def test_one_conversation_not_indexed_is_said_in_the_singular(
    client: Client, reviewer: User, source: Source, indexed_later: None
) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    notice = _notice(client)
    assert notice is not None and notice.startswith("1 conversation is not indexed")


def test_the_not_indexed_count_stops_at_its_bound(
    client: Client, reviewer: User, source: Source, indexed_later: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "NOT_INDEXED_LIMIT", 2)
    for _ in range(3):
        factories.make_conversation(source, n_messages=2)
    assert selectors.not_indexed_count(Conversation.objects.all()) == BoundedCount(2, more=True)

    client.force_login(reviewer)
    notice = _notice(client)
    assert notice is not None and notice.startswith("More than 2 conversations are not indexed")


def test_the_api_answers_the_not_indexed_count_of_the_callers_conversations_only(
    ingest_client: APIClient,
    other_ingest_key: str,
    api_client: APIClient,
    auditor: User,
    source: Source,
    other_source: Source,
    indexed_later: None,
) -> None:
    factories.make_conversation(source, n_messages=2)
    factories.make_conversation(source, n_messages=2)
    factories.make_conversation(other_source, n_messages=2)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    api_client.force_login(auditor)

    assert _header(ingest_client) == "2"
    assert _header(other) == "1"
    assert _header(api_client) == "3"  # a person reads every source

    search_index_stale()
    assert _header(ingest_client) == "0"
    assert _header(api_client) == "0"


def test_the_api_says_past_the_bound_that_there_are_more(
    api_client: APIClient, auditor: User, source: Source, indexed_later: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "NOT_INDEXED_LIMIT", 1)
    factories.make_conversation(source, n_messages=2)
    factories.make_conversation(source, n_messages=2)
    api_client.force_login(auditor)
    assert _header(api_client) == "1+"


def test_the_list_with_conversations_not_indexed_takes_the_same_queries_for_one_and_many(
    client: Client, reviewer: User, source: Source, indexed_later: None, django_assert_num_queries: Any
) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    # session, user, groups, the sources and labels the form offers (then cached), the page, its count, those not
    # indexed yet, the saved views
    with django_assert_num_queries(9):
        assert client.get("/conversations/").status_code == 200
    for _ in range(5):
        factories.make_conversation(source, n_messages=2)
    with django_assert_num_queries(7):
        assert client.get("/conversations/").status_code == 200
