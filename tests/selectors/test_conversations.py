"""The conversation list's selectors (chats/selectors/conversations.py): the list's bounded result count, and the
list's constant number of queries. The list page itself is tested in tests/test_views.py, the filters in
tests/test_filters.py and the search in tests/selectors/test_search.py."""

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
from tests import factories

RESULT = re.compile(r'<p class="muted" id="result-count">(.*?)</p>', re.S)


def test_the_result_count_is_exact_up_to_its_bound_and_more_than_past_it(
    source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(3):
        factories.make_conversation(source, n_messages=2)
    assert selectors.conversation_count_bounded(Conversation.objects.all()) == BoundedCount(3, more=False)
    monkeypatch.setattr(selectors, "RESULT_COUNT_LIMIT", 2)
    assert selectors.conversation_count_bounded(Conversation.objects.all()) == BoundedCount(2, more=True)


def test_the_api_says_that_nothing_waits_to_be_indexed(api_client: APIClient, auditor: User, source: Source) -> None:
    """X-Search-Not-Indexed is deprecated: a message's vector is built as it is stored, so it is always 0."""
    factories.make_conversation(source, n_messages=2)
    api_client.force_login(auditor)
    response = api_client.get("/api/v1/conversations/")
    assert response.status_code == 200 and response["X-Search-Not-Indexed"] == "0"


def test_the_list_takes_the_same_queries_for_one_conversation_and_many(
    client: Client, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    # session, user, groups, the sources and labels the form offers (then cached), the page, its count, the saved
    # views
    with django_assert_num_queries(8):
        assert client.get("/conversations/").status_code == 200
    for _ in range(5):
        factories.make_conversation(source, n_messages=2)
    with django_assert_num_queries(6):
        response = client.get("/conversations/")
    assert RESULT.search(response.content.decode()) is not None
