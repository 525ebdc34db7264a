"""The dashboard's policy figures (chats/selectors/dashboard.py): violations per day beside the conversations with a
context, and the artifacts with the worst feedback, as the selectors count them and as the home page shows them.
Documents go in through the ingest API, as in production."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chats.models import Conversation, Source
from chats.selectors.dashboard import violations_by_day, worst_artifacts
from chats.services.feedback import feedback_submit
from tests.factories import make_conversation
from tests.factories.artifacts import FIRST_MARKDOWN, page, protocol_document, section
from tests.factories.artifacts import ingested as post
from tests.factories.policy import document

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(client: Client, reviewer: User) -> Client:
    client.force_login(reviewer)
    return client


def test_the_dashboard_counts_violations_per_day_beside_the_conversations_with_a_context(
    source: Source, ingest_client: APIClient, reader: Client
) -> None:
    post(ingest_client, document())  # a violation
    post(ingest_client, protocol_document("clean", FIRST_MARKDOWN))  # judged, permitted
    make_conversation(source)  # no context: not judged
    today = dt.datetime.now(dt.UTC).date()
    Conversation.objects.filter(external_id="clean").update(
        last_activity_at=dt.datetime.combine(today - dt.timedelta(days=3), dt.time(12), tzinfo=dt.UTC)
    )

    days = {row.day: (row.with_context, row.violations) for row in violations_by_day(today=today)}
    body = page(reader, "/")

    assert len(days) == 30 and days[today] == (1, 1) and days[today - dt.timedelta(days=3)] == (1, 0)
    assert sum(with_context for with_context, _ in days.values()) == 2
    table = section(body, "policy-title")
    assert f'<time datetime="{today.isoformat()}">' in table
    assert f"?policy=violation&amp;date_from={today.isoformat()}&amp;date_to={today.isoformat()}" in table
    assert "Policy violations per day" in table and "<svg" in table


def test_the_dashboard_lists_the_artifacts_with_the_worst_feedback_linked_to_their_pages(
    ingest_client: APIClient, reader: Client, reviewer: User, other_reviewer: User
) -> None:
    liked = post(ingest_client, protocol_document("liked", FIRST_MARKDOWN, artifact_id="airalogy.id.protocol.good"))
    disliked = post(
        ingest_client, protocol_document("disliked", FIRST_MARKDOWN, artifact_id="airalogy.id.protocol.bad")
    )
    mixed = post(ingest_client, protocol_document("mixed", FIRST_MARKDOWN, artifact_id="airalogy.id.protocol.so-so"))
    for uuid, scores in ((liked, (1, 1)), (disliked, (-1, -1)), (mixed, (1, -1))):
        conversation = Conversation.objects.get(uuid=uuid)
        for author, score in zip((reviewer, other_reviewer), scores, strict=True):
            feedback_submit(author=author, conversation=conversation, score=score)

    worst = [(a.artifact_id, a.up, a.down, a.scored) for a in worst_artifacts()]
    body = section(page(reader, "/"), "worst-title")

    assert worst == [
        ("airalogy.id.protocol.bad", 0, 2, 2),
        ("airalogy.id.protocol.so-so", 1, 1, 2),
        ("airalogy.id.protocol.good", 2, 0, 2),
    ]
    assert body.index("airalogy.id.protocol.bad") < body.index("airalogy.id.protocol.so-so")
    assert reverse("chats:artifact_detail", args=["airalogy.id.protocol.bad"]) in body
    assert "0%" in body and "50%" in body
