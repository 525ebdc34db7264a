"""The Trends page (chats/views_trends.py) and the dashboard's links: a point's link lists exactly the
conversations it counts, bad parameters answer 400 naming the parameter, and the page reads a constant number of
queries."""

from __future__ import annotations

import datetime as dt
import html
import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import (
    Conversation,
    Feedback,
    FeedbackOrigin,
    InputFormat,
    Message,
    Queue,
    QueueItem,
    Review,
    ReviewState,
    Score,
    Source,
    ToolCall,
)
from chats.selectors.export_jobs import job_export
from chats.selectors.review import current_rubric
from chats.selectors.trends import AGREEMENT_QUEUES
from chats.services.export_jobs import export_job_create
from chats.services.review import queue_add_conversations
from chats.services.trend_rollups import trends_rollup
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db

ROW_LINK = re.compile(r'class="row-link" href="/conversations/[0-9a-f-]{36}/')
REVIEWED_LINK = re.compile(r'<a href="(/conversations/\?reviewed_by=[^"]+)" aria-label="([^"]+)"')
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


# ---- Team review


def _review(person: User, queue: Queue, conversation: Conversation, *, days_ago: int, answers: object = None) -> None:
    item = QueueItem.objects.get(queue=queue, conversation=conversation)
    Review.objects.create(
        conversation=conversation,
        item=item,
        reviewer=person,
        rubric_version=current_rubric(queue),
        answers=ANSWERS if answers is None else answers,
        state=ReviewState.SUBMITTED,
        submitted_at=timezone.now() - dt.timedelta(days=days_ago),
    )


def _team(source: Source, reviewer: User, other: User, lead: User, *, scale: int = 1) -> tuple[Queue, Queue]:
    """Two queues: ``reviewer`` works for the first, ``other`` for both; some conversations are items of both, and
    ``other`` reviews those in both queues (one conversation, two reviews)."""
    answers, shared = (
        make_queue(lead, [reviewer, other], name=f"Answers {scale}"),
        make_queue(lead, [other], name=f"Tools {scale}"),
    )
    conversations = fill_queue(answers, lead, source, 4 * scale)
    queue_add_conversations(
        actor=lead, queue=shared, conversations=Conversation.objects.filter(pk__in=[c.pk for c in conversations[:2]])
    )
    only_shared = fill_queue(shared, lead, source, 2 * scale)
    for index, conversation in enumerate(conversations):
        _review(reviewer, answers, conversation, days_ago=index % 3)
        _review(other, answers, conversation, days_ago=index % 2, answers={**ANSWERS, "correct": "wrong"})
    for index, conversation in enumerate(conversations[:2] + only_shared):
        _review(other, shared, conversation, days_ago=index % 2)
    return answers, shared


def _reviewed_links(client: Client, query: dict[str, str]) -> list[tuple[str, int]]:
    body = client.get(reverse("chats:trends"), query).content.decode()
    found = []
    for href, label in REVIEWED_LINK.findall(body):
        value = re.search(r": (\d+) conversations? reviewed", html.unescape(label))
        assert value is not None, label
        found.append((html.unescape(href), int(value.group(1))))
    return found


def test_each_reviewer_count_links_to_a_list_of_exactly_its_conversations(
    client: Client, reviewer: User, other_reviewer: User, source: Source
) -> None:
    lead = make_lead()
    _team(source, reviewer, other_reviewer, lead)
    _signed_in(client, lead)
    links = _reviewed_links(client, {"bucket": "day", "periods": "7"})
    assert {href.split("&")[0] for href, _ in links} == {
        "/conversations/?reviewed_by=rita",
        "/conversations/?reviewed_by=oscar",
    }
    for href, value in links:
        assert _listed(client, href) == value, href
    # oscar reviewed the two shared conversations twice on the same day (once per queue): counted once a day, his
    # four reviews of each day said apart.
    oscar = [value for href, value in links if "reviewed_by=oscar" in href]
    assert oscar == [3, 3]
    body = client.get(reverse("chats:trends"), {"bucket": "day", "periods": "7"}).content.decode()
    assert body.count('<span class="muted small">(4 reviews)</span>') == 2


def test_a_reviewer_counts_only_the_reviews_of_the_queues_they_work_for(
    client: Client, reviewer: User, other_reviewer: User, source: Source
) -> None:
    lead = make_lead()
    _team(source, reviewer, other_reviewer, lead)
    _signed_in(client, reviewer)
    links = _reviewed_links(client, {"bucket": "week", "periods": "2"})
    oscar = [(href, value) for href, value in links if "reviewed_by=oscar" in href]
    # In the queue rita works for, oscar reviewed its four conversations; the other queue's two are not hers to see.
    assert sum(value for _, value in oscar) == 4
    for href, value in links:
        assert _listed(client, href) == value, href
    everything = "/conversations/?reviewed_by=oscar"
    assert _listed(client, everything) == 4
    assert _listed(_signed_in(Client(), lead), everything) == 6
    assert "Agreement per queue" not in client.get(reverse("chats:trends")).content.decode()


@pytest.mark.parametrize(
    ("query", "parameter"),
    [({"reviewed_from": "yesterday"}, "reviewed_from"), ({"reviewed_to": "2026-13-01"}, "reviewed_to")],
)
def test_a_bad_reviewed_filter_is_a_400_naming_it(
    client: Client, reviewer: User, query: dict[str, str], parameter: str
) -> None:
    response = _signed_in(client, reviewer).get(reverse("chats:conversation_list"), query)
    assert response.status_code == 400
    assert parameter in response.content.decode()


def test_agreement_per_queue_is_the_queue_pages_figure_over_the_range(
    client: Client, reviewer: User, other_reviewer: User, source: Source
) -> None:
    lead = make_lead()
    answers, shared = _team(source, reviewer, other_reviewer, lead)
    body = _signed_in(client, lead).get(reverse("chats:trends"), {"bucket": "week", "periods": "2"}).content.decode()
    assert "Agreement per queue" in body
    assert f'href="{reverse("chats:queue_detail", args=[answers.pk])}"' in body
    assert f'href="{reverse("chats:queue_detail", args=[shared.pk])}"' in body
    # rita and oscar disagree on every item's "correct": alpha below chance, over four items ("too few", as the
    # queue page says of fewer than MIN_ITEMS).
    row = re.search(r'<tr data-queue="Answers 1" data-question="correct">(.*?)</tr>', body, re.S)
    assert row is not None
    assert "too few" in row.group(1)
    alpha = re.search(r"<td>(-?\d\.\d{3})</td>", row.group(1))
    assert alpha is not None and float(alpha.group(1)) < 0
    # A range before any review: no figure.
    before = client.get(reverse("chats:trends"), {"date_to": "2020-01-05"}).content.decode()
    assert "No reviews submitted in this range: no agreement figure." in before


def test_the_page_reads_the_same_number_of_queries_with_reviews_at_two_sizes(
    client: Client, reviewer: User, other_reviewer: User, source: Source, django_assert_num_queries: object
) -> None:
    lead = make_lead()
    _signed_in(client, lead)
    url = reverse("chats:trends")
    _world(source)
    _team(source, reviewer, other_reviewer, lead)
    client.get(url)
    with django_assert_num_queries(11) as small:  # type: ignore[operator]
        client.get(url)
    for scale in range(2, AGREEMENT_QUEUES + 3):  # more queues than the page shows, and more reviews
        _team(source, reviewer, other_reviewer, lead, scale=scale)
    _world(source, scale=3)
    with django_assert_num_queries(len(small.captured_queries)):  # type: ignore[operator]
        body = client.get(url).content.decode()
    assert "other queues with reviews not shown" in body


def test_reviewed_by_through_the_api_counts_what_the_caller_may_know(
    reviewer: User, other_reviewer: User, source: Source, ingest_client: APIClient
) -> None:
    lead = make_lead()
    _team(source, reviewer, other_reviewer, lead)

    def count(client: APIClient) -> int:
        response = client.get("/api/v1/conversations/", {"reviewed_by": "oscar", "page_size": "100"})
        assert response.status_code == 200
        return len(response.json()["results"])

    as_lead, as_reviewer = APIClient(), APIClient()
    as_lead.force_login(lead)
    as_reviewer.force_login(reviewer)
    assert (count(as_lead), count(as_reviewer), count(ingest_client)) == (6, 4, 0)
    refused = as_reviewer.get("/api/v1/conversations/", {"reviewed_from": "yesterday"})
    assert refused.status_code == 400
    assert "reviewed_from" in refused.content.decode()


def test_reviewed_by_in_an_export_or_an_export_job_counts_what_its_requester_may_know(
    reviewer: User, other_reviewer: User, source: Source, ingest_client: APIClient
) -> None:
    lead = make_lead()
    _team(source, reviewer, other_reviewer, lead)

    def exported(client: APIClient) -> int:
        response: Any = client.get("/api/v1/export/", {"format": "openai", "reviewed_by": "oscar"})
        assert response.status_code == 200
        return len(b"".join(response.streaming_content).splitlines())

    def job_count(person: User) -> int:
        job = export_job_create(actor=person, requested_by=person, format="openai", filters={"reviewed_by": "oscar"})
        return job_export(job).queryset().count()

    as_lead, as_reviewer = APIClient(), APIClient()
    as_lead.force_login(lead)
    as_reviewer.force_login(reviewer)
    # The reviewer works for the first queue only: the second queue's reviews are not theirs to know of.
    assert (exported(as_lead), exported(as_reviewer), exported(ingest_client)) == (6, 4, 0)
    assert (job_count(lead), job_count(reviewer)) == (6, 4)


def test_the_reviewed_filters_show_as_chips(client: Client, reviewer: User) -> None:
    body = (
        _signed_in(client, reviewer)
        .get(reverse("chats:conversation_list"), {"reviewed_by": "oscar", "reviewed_from": "2026-01-05"})
        .content.decode()
    )
    assert "<span>Reviewed by: oscar</span>" in body
    assert "<span>Reviewed from: 2026-01-05</span>" in body
