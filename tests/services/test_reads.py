"""Read audit (chats/services/reads.py): opening a conversation's page is recorded once per window, by person, apart
from the audit log. (Views pruned: tests/management/commands/test_prune_read_audit.py; the thread's Activity panel
that shows them: tests/selectors/test_activity.py; on the API: tests/api/test_read_audit_api.py.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from chats.models import AuditEvent, Conversation, ReadEvent, Source, ViewedVia
from chats.services.reads import read_event_record
from tests import factories

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def views_of(conversation: Conversation) -> list[tuple[str, str]]:
    rows = ReadEvent.objects.filter(conversation_uuid=conversation.uuid).order_by("id")
    return list(rows.values_list("viewer_name", "via"))


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=4)


def test_a_view_is_recorded_once_within_the_window_and_again_after_it(
    settings: Any, reviewer: User, conversation: Conversation
) -> None:
    # Three seconds, so that the three reads below fall inside it even on a loaded machine; the test then waits
    # (on the condition, bounded) for the window to end.
    settings.MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS = 3
    client = signed_in(reviewer)
    first = time.monotonic()
    for _ in range(3):
        assert client.get(conversation.get_absolute_url()).status_code == 200
    assert views_of(conversation) == [("rita", "page")]

    # Once the window is over, the next view is recorded again: read on until it is (bounded), one view at a time.
    started = time.monotonic()
    while len(views_of(conversation)) == 1:
        assert time.monotonic() - started < 20, "the window never ended"
        time.sleep(0.05)
        client.get(conversation.get_absolute_url())

    assert time.monotonic() - first >= 2.9  # not before the window (three seconds from the first view) was over
    assert views_of(conversation) == [("rita", "page"), ("rita", "page")]
    viewer_ids = ReadEvent.objects.values_list("viewer_id", flat=True)
    assert set(viewer_ids) == {reviewer.pk}


def test_each_person_and_each_conversation_has_a_window_of_its_own(
    reviewer: User, other_reviewer: User, conversation: Conversation, source: Source
) -> None:
    other = factories.make_conversation(source, n_messages=2)
    signed_in(reviewer).get(conversation.get_absolute_url())
    signed_in(reviewer).get(other.get_absolute_url())
    signed_in(other_reviewer).get(conversation.get_absolute_url())

    assert views_of(conversation) == [("rita", "page"), ("oscar", "page")]
    assert views_of(other) == [("rita", "page")]


def test_a_repeated_view_costs_no_query_and_a_recorded_one_one_insert(
    reviewer: User, conversation: Conversation, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(1) as captured:
        assert read_event_record(viewer=reviewer, conversation_uuid=conversation.uuid, via=ViewedVia.PAGE)
    assert captured.captured_queries[0]["sql"].startswith("INSERT")
    with django_assert_num_queries(0):
        assert not read_event_record(viewer=reviewer, conversation_uuid=conversation.uuid, via=ViewedVia.API)


def test_nothing_is_recorded_when_read_audit_is_off(settings: Any, reviewer: User, conversation: Conversation) -> None:
    settings.MASTERBRAIN_READ_AUDIT = False
    assert signed_in(reviewer).get(conversation.get_absolute_url()).status_code == 200
    assert APIClient().get(f"/api/v1/conversations/{conversation.uuid}/").status_code in (401, 403)
    assert not ReadEvent.objects.exists()


def test_refused_and_missing_pages_record_no_view(
    no_role_user: User, reviewer: User, conversation: Conversation
) -> None:
    assert signed_in(no_role_user).get(conversation.get_absolute_url()).status_code == 403
    assert Client().get(conversation.get_absolute_url()).status_code == 302
    assert signed_in(reviewer).get("/conversations/00000000-0000-4000-8000-000000000000/").status_code == 404
    assert not ReadEvent.objects.exists()


def test_views_are_not_audit_events(reviewer: User, conversation: Conversation) -> None:
    before = AuditEvent.objects.count()
    signed_in(reviewer).get(conversation.get_absolute_url())
    assert AuditEvent.objects.count() == before
    assert ReadEvent.objects.count() == 1
