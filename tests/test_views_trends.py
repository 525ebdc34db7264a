"""The Trends page (chats/views_trends.py) and the dashboard's links: a point's link lists exactly the
conversations it counts, bad parameters answer 400 naming the parameter, and the page reads a constant number of
queries."""

from __future__ import annotations

import datetime as dt
import html
import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chats.models import Conversation, Feedback, FeedbackOrigin, InputFormat, Message, Score, Source, ToolCall
from chats.services.trend_rollups import trends_rollup

pytestmark = pytest.mark.django_db

ROW_LINK = re.compile(r'class="row-link" href="/conversations/[0-9a-f-]{36}/')
TREND_LINK = re.compile(r'<a href="(/conversations/\?[^"]+)" aria-label="([^"]+)" class="trend-link">')


def _conversation(source: Source, *, model: str, days_ago: int, down: bool = False, unanswered: str = "") -> None:
    external = uuid.uuid4().hex
    conversation = Conversation.objects.create(
        source=source,
        external_id=external,
        external_id_digest=Conversation.digest_of(external),
        input_format=InputFormat.OPENAI,
        model_name=model,
        workflow="triage",
        last_activity_at=timezone.now() - dt.timedelta(days=days_ago),
        message_count=3,
    )
    message = Message.objects.create(conversation=conversation, key="m0", position=0, depth=0, role="assistant")
    Feedback.objects.create(
        conversation=conversation,
        message=message,
        origin=FeedbackOrigin.MASTERBRAIN,
        score=Score.DOWN if down else Score.UP,
    )
    if unanswered:
        ToolCall.objects.create(conversation=conversation, message=message, call_id="c1", name=unanswered)
    trends_rollup([conversation.pk])  # what the writes' post-commit step does


def _world(source: Source, scale: int = 1) -> None:
    for index in range(3 * scale):
        _conversation(source, model="gpt-4o", days_ago=index % 20, down=index % 2 == 0, unanswered="search")
        _conversation(source, model="claude", days_ago=(index * 3) % 20, down=index % 3 == 0)


def _signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def _listed(client: Client, url: str) -> int:
    response = client.get(url)
    assert response.status_code == 200
    return len(ROW_LINK.findall(response.content.decode()))


def test_every_point_links_to_a_list_of_exactly_its_conversations(
    client: Client, reviewer: User, source: Source
) -> None:
    _world(source)
    _signed_in(client, reviewer)
    response = client.get(reverse("chats:trends"), {"bucket": "day", "periods": "30"})
    assert response.status_code == 200
    body = response.content.decode()
    links = TREND_LINK.findall(body)
    assert len(links) > 10
    checked = 0
    for href, label in links:
        # The label says the value: "…: 3 conversations" or "…: 1 of 2 scored conversations with a thumbs down".
        value = int(re.search(r": (\d+) (?:conversation|of )", html.unescape(label)).group(1))  # type: ignore[union-attr]
        assert _listed(client, html.unescape(href)) == value, label
        checked += 1
    assert checked == len(links)


def test_the_page_says_when_two_models_cannot_be_told_apart(client: Client, reviewer: User, source: Source) -> None:
    _world(source)
    response = _signed_in(client, reviewer).get(
        reverse("chats:trends"), {"cohort_a": "gpt-4o", "cohort_b": "claude", "periods": "4"}
    )
    body = response.content.decode()
    assert "95% interval (Wilson)" in body
    assert "The data do not support a difference" in body


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"bucket": "month"}, "bucket"),
        ({"periods": "\uff11\uff12"}, "periods"),
        ({"periods": "0"}, "periods"),
        ({"periods": "999"}, "periods"),
        ({"date_from": "yesterday"}, "date_from"),
        ({"date_from": "2026-02-01", "date_to": "2026-01-01"}, "date_from"),
        ({"date_from": "2000-01-01", "date_to": "2026-01-01"}, "date_from"),
        ({"cohort_a": "a\x00b"}, "cohort_a"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    client: Client, reviewer: User, query: dict[str, str], parameter: str
) -> None:
    response = _signed_in(client, reviewer).get(reverse("chats:trends"), query)
    assert response.status_code == 400
    body = response.content.decode()
    assert f"<code>{parameter}</code>" in body or f"'{parameter}'" in body  # a NUL: refused by the middleware


def test_the_page_reads_the_same_number_of_queries_at_two_sizes(
    client: Client, reviewer: User, source: Source, django_assert_num_queries: object
) -> None:
    _signed_in(client, reviewer)
    url = reverse("chats:trends")
    _world(source)
    client.get(url)  # warm the session and the groups
    with django_assert_num_queries(8) as small:  # type: ignore[operator]
        client.get(url)
    _world(source, scale=5)
    with django_assert_num_queries(len(small.captured_queries)):  # type: ignore[operator]
        client.get(url)


def test_the_dashboard_links_its_numbers_to_their_conversations(client: Client, reviewer: User, source: Source) -> None:
    _world(source)
    body = _signed_in(client, reviewer).get(reverse("chats:home")).content.decode()
    assert f'href="{reverse("chats:trends")}"' in body
    assert "bar-b" not in body
    by_model = re.search(r'<a href="(/conversations/\?model=gpt-4o)" aria-label="gpt-4o: (\d+)"', body)
    assert by_model is not None
    assert _listed(client, by_model.group(1)) == int(by_model.group(2)) == 3
    by_source = re.search(r'<a href="(/conversations/\?source=masterbrain)" aria-label="masterbrain: (\d+)"', body)
    assert by_source is not None and _listed(client, by_source.group(1)) == int(by_source.group(2)) == 6
