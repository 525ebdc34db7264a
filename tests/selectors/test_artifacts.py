"""The artifact list's times (chats.selectors.artifacts): first and last given are the conversations' own times,
when the model was given the artifact, never when the document was received; the received time is its own column."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, InjectedArtifact, Message, Source
from chats.selectors.artifacts import ArtifactFilters, artifact_page
from tests import factories

pytestmark = pytest.mark.django_db

LONG_AGO = dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC)


def test_first_and_last_given_are_the_conversations_own_times(source: Source, reviewer: User) -> None:
    early = factories.make_record_qa(source)
    Conversation.objects.filter(pk=early.pk).update(started_at=LONG_AGO)
    later = factories.make_record_qa(Source.objects.create(name="second"))
    # A message's own time wins over its conversation's start.
    message_ids = InjectedArtifact.objects.filter(conversation=later).values("message_id")
    Message.objects.filter(pk__in=message_ids).update(sent_at=LONG_AGO + dt.timedelta(days=3))

    page = artifact_page(ArtifactFilters(), sort="last_injected")
    injected = [artifact for artifact in page.artifacts if artifact.injected_conversations == 2]

    assert injected
    for artifact in injected:
        assert artifact.first_injected_at == LONG_AGO
        assert artifact.last_injected_at == LONG_AGO + dt.timedelta(days=3)
        # Received today, years after the conversations' times.
        assert artifact.last_received_at is not None and artifact.last_received_at > LONG_AGO + dt.timedelta(days=300)

    client = Client()
    client.force_login(reviewer)
    html = client.get("/artifacts/").content.decode()
    assert "Last received" in html and '<time datetime="2024-03-01T09:30:00+00:00">2024-03-01 09:30</time>' in html


def test_an_input_without_times_has_none_given_rather_than_its_received_time(source: Source, reviewer: User) -> None:
    conversation = factories.make_record_qa(source)
    Conversation.objects.filter(pk=conversation.pk).update(started_at=None)
    Message.objects.filter(conversation=conversation).update(sent_at=None)
    page = artifact_page(ArtifactFilters(), sort="last_received")
    injected = [artifact for artifact in page.artifacts if artifact.injected_conversations]
    assert injected and all(a.first_injected_at is None and a.last_received_at is not None for a in injected)
    client = Client()
    client.force_login(reviewer)
    assert "not given" in client.get("/artifacts/").content.decode()
