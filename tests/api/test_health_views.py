"""GET /api/v1/health/: the asynchronous ingest queue's depth and the age of its oldest receipt, in all and per
source, for staff; a constant number of queries however many sources and receipts are queued."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import IngestionReceipt, Source
from chats.services.ingest_queue import receipts_enqueue
from tests.factories.poison import chat

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]


def enqueue(source: Source, count: int, age: timedelta, capture: Capture) -> None:
    """`count` documents queued for `source` (their task never sent), received `age` ago."""
    with capture(execute=False):
        receipts = receipts_enqueue(
            source=source,
            api_key=None,
            format=None,
            contents=[json.dumps(chat(f"{source.name}-{age}-{n}")).encode() for n in range(count)],
        )
    IngestionReceipt.objects.filter(pk__in=[r.pk for r in receipts]).update(created_at=timezone.now() - age)


def health(user: User, django_assert_num_queries: Any) -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(user)
    with django_assert_num_queries(1):  # the queued receipts by source (authentication forced: no session read)
        response = client.get("/api/v1/health/")
    assert response.status_code == 200
    queue: dict[str, Any] = response.json()["ingest_queue"]
    return queue


def test_an_empty_queue_says_so(admin_user: User, django_assert_num_queries: Any) -> None:
    assert health(admin_user, django_assert_num_queries) == {
        "queued": 0,
        "oldest_queued_at": None,
        "oldest_age_seconds": None,
        "sources": [],
    }


def test_staff_see_the_depth_and_the_oldest_age_per_source_in_one_query(
    admin_user: User,
    source: Source,
    other_source: Source,
    django_assert_num_queries: Any,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    enqueue(source, 2, timedelta(minutes=30), django_capture_on_commit_callbacks)
    enqueue(source, 1, timedelta(minutes=5), django_capture_on_commit_callbacks)
    enqueue(other_source, 1, timedelta(minutes=90), django_capture_on_commit_callbacks)

    queue = health(admin_user, django_assert_num_queries)

    assert queue["queued"] == 4
    assert 90 * 60 <= queue["oldest_age_seconds"] < 91 * 60
    assert [(s["name"], s["queued"]) for s in queue["sources"]] == [("masterbrain", 3), ("other-logger", 1)]
    first, second = queue["sources"]
    assert 30 * 60 <= first["oldest_age_seconds"] < 31 * 60
    assert 90 * 60 <= second["oldest_age_seconds"] < 91 * 60
    assert queue["oldest_queued_at"] == second["oldest_queued_at"]


def test_receipts_that_have_an_outcome_are_not_counted(
    admin_user: User,
    source: Source,
    django_assert_num_queries: Any,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    enqueue(source, 2, timedelta(minutes=1), django_capture_on_commit_callbacks)
    IngestionReceipt.objects.filter(pk=IngestionReceipt.objects.order_by("pk")[0].pk).update(outcome="rejected")

    assert health(admin_user, django_assert_num_queries)["queued"] == 1
