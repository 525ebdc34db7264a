"""The conversation list at scale: how many conversations wait for their search vectors (page and API, scoped to
the caller), the search's match count read from its own probe, and the filter form's widgets drawn in one Jinja2
loop with Django's own markup."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.forms.renderers import DjangoTemplates
from django.test import Client
from rest_framework.test import APIClient

from chats import filters
from chats.filters import ConversationFilter
from chats.models import Conversation, Source
from chats.selectors import conversations as selectors
from chats.services.labels import label_create, label_delete, label_update
from chats.services.search import search_index_stale
from chats.services.sources import source_get_or_create
from tests import factories

NOTICE = re.compile(r'<p class="muted small" id="not-indexed">(.*?)</p>', re.S)
COUNT = re.compile(r'<p class="muted" id="search-count">(.*?)</p>', re.S)


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
    assert selectors.not_indexed_count(Conversation.objects.all()) == filters.BoundedCount(2, more=True)

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
    # session, user, groups, the sources and labels the form offers (then cached), the page, those not indexed yet
    with django_assert_num_queries(7):
        assert client.get("/conversations/").status_code == 200
    for _ in range(5):
        factories.make_conversation(source, n_messages=2)
    with django_assert_num_queries(5):
        assert client.get("/conversations/").status_code == 200


# --------------------------------------------------------------------------------------------------------------
# The search's match count (PostgreSQL: the probe of the GIN index)


def _count(client: Client, query: str) -> str | None:
    response = client.get(f"/conversations/?{query}")
    assert response.status_code == 200
    found = COUNT.search(response.content.decode())
    return found.group(1) if found else None


@pytest.mark.postgres
def test_a_search_says_how_many_conversations_match_indexed_or_not(
    client: Client, reviewer: User, source: Source, indexed_later: None
) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    factories.make_conversation(source, n_messages=4, topic="electrophoresis")
    search_index_stale()
    factories.make_conversation(source, n_messages=4, topic="photobleaching")  # stale: read from its messages

    assert _count(client, "q=photobleaching") == "3 conversations match the search."
    assert _count(client, "q=electrophoresis") == "1 conversation matches the search."
    assert _count(client, "q=photobleaching&model=qwen3.5-flash") == (
        "3 conversations match the search and the other filters."
    )
    assert _count(client, "q=nowhere") is None  # the list says that nothing matches
    assert _count(client, "") is None


@pytest.mark.postgres
def test_past_the_probe_the_search_count_says_more_than(
    client: Client, reviewer: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filters, "SEARCH_PROBE_LIMIT", 2)
    for _ in range(3):
        factories.make_conversation(source, n_messages=4, topic="photobleaching")
    search_index_stale()
    client.force_login(reviewer)

    response = client.get("/conversations/?q=photobleaching")

    assert COUNT.search(response.content.decode()).group(1) == "More than 2 conversations match the search."  # type: ignore[union-attr]
    assert len(response.context["page"].conversations) == 3


# --------------------------------------------------------------------------------------------------------------
# The filter form's widgets


@pytest.mark.parametrize(
    "data",
    [
        None,
        {
            "source": "masterbrain",
            "has_warnings": ["orphan_result", "any"],
            "date_from": "2026-01-01",
            "model": 'qwen "3" <plus> & more',
            "label": "no-such-label",
            "has_tool_calls": "true",
            "model_setting": "not a setting",
            "q": "annealing",
        },
    ],
)
def test_the_filter_form_draws_every_widget_as_django_does(source: Source, data: Any) -> None:
    factories.make_labels("helpful", "wrong <answer>")
    filterset = ConversationFilter(data, queryset=Conversation.objects.all())
    filterset.is_valid()
    django = DjangoTemplates()
    for field in filterset.form:
        fast = str(field)
        field.form.renderer = django
        slow = str(field)
        field.form.renderer = type(filterset.form).default_renderer
        # Django's includes leave blank lines; Jinja2 spells escaped quotes &#34; and &#39;.
        assert _normal(fast) == _normal(slow), field.name


def _normal(html: str) -> str:
    html = html.replace("&#34;", "&quot;").replace("&#39;", "&#x27;")
    return "\n".join(line for line in html.splitlines() if line.strip())


@pytest.mark.postgres
def test_the_search_probe_leaves_the_planner_settings_as_they_were(
    client: Client, reviewer: User, source: Source
) -> None:
    from django.db import connection

    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    search_index_stale()
    client.force_login(reviewer)
    # The test runs in a transaction, as a request in ATOMIC_REQUESTS would: the probe's SET LOCAL must not outlive it.
    assert _count(client, "q=photobleaching") == "1 conversation matches the search."
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone() == ("on",)


# --------------------------------------------------------------------------------------------------------------
# The sources and labels the form offers, cached


def _offered(client: Client, name: str) -> list[str]:
    html = client.get("/conversations/").content.decode()
    select = re.search(rf'<select name="{name}".*?</select>', html, re.S)
    assert select is not None
    return re.findall(r'<option value="([^"]*)"', select.group(0))[1:]  # after "Any ..."


def test_a_label_created_renamed_or_deleted_is_offered_as_it_is_at_once(client: Client, reviewer: User) -> None:
    client.force_login(reviewer)
    assert _offered(client, "label") == []  # and cached

    helpful = label_create(name="helpful")
    assert _offered(client, "label") == ["helpful"]
    label_update(label=helpful, name="useful", description="")
    label_create(name="wrong")
    assert _offered(client, "label") == ["useful", "wrong"]
    label_delete(label=helpful)
    assert _offered(client, "label") == ["wrong"]


def test_a_source_is_offered_once_the_cache_has_expired_and_filters_at_once(
    client: Client, reviewer: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filters, "CHOICES_SECONDS", 1)
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    assert _offered(client, "source") == [source.name]

    newcomer, _ = source_get_or_create(name="newcomer")
    first = factories.make_conversation(newcomer, n_messages=2)
    assert _offered(client, "source") == [source.name]  # the cached choices, for at most CHOICES_SECONDS
    # What the filter accepts is read from the database: the new source filters already.
    page = client.get("/conversations/?source=newcomer").context["page"]
    assert [c.pk for c in page.conversations] == [first.pk]

    time.sleep(1.1)
    assert _offered(client, "source") == sorted([source.name, "newcomer"])


def test_a_source_without_conversations_is_not_offered(client: Client, reviewer: User, source: Source) -> None:
    client.force_login(reviewer)
    source_get_or_create(name="silent")
    factories.make_conversation(source, n_messages=2)
    assert _offered(client, "source") == [source.name]
    # Refused as a name that does not exist is: the source filter accepts the sources with conversations.
    assert 'id="id_source_error"' in client.get("/conversations/?source=silent").content.decode()


@pytest.mark.parametrize("data", [None, {"source": "masterbrain", "label": "wrong <answer>"}])
def test_the_cached_choices_draw_the_selects_the_database_would(source: Source, data: Any) -> None:
    factories.make_conversation(source, n_messages=2)
    factories.make_labels("helpful", "wrong <answer>")
    read = ConversationFilter(data, queryset=Conversation.objects.all())
    cached = ConversationFilter(data, queryset=Conversation.objects.all())
    cached.offer_cached_choices()
    for name in ("source", "label"):
        assert str(cached.form[name]) == str(read.form[name])
