"""requeue_ingest: sends the task again for receipts still queued, one task per source, and takes one source
(--source) or named receipts (--receipt), so that one source's poison document never holds up another's."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from celery.signals import task_prerun
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import IngestionReceipt, Source
from tests.factories.poison import MARKER, chat, refuse_in_database

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

Capture = Callable[..., Any]


def key_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    return client


@pytest.fixture
def lost(ingest_key: str, other_ingest_key: str, django_capture_on_commit_callbacks: Capture) -> dict[str, list[str]]:
    """Two sources' asynchronous bulks whose tasks were lost with the broker, received an hour ago; the first
    source's holds a document the database refuses. Receipt uuids by source name."""
    sent = {}
    for raw_key, name, documents in (
        (ingest_key, "masterbrain", [chat("a-1"), chat("a-poison", f"answer {MARKER}"), chat("a-2")]),
        (other_ingest_key, "other-logger", [chat("b-1"), chat("b-2")]),
    ):
        with django_capture_on_commit_callbacks(execute=False):
            response = key_client(raw_key).post(
                "/api/v1/ingest/bulk/?async=true", data=json.dumps(documents), content_type="application/json"
            )
        sent[name] = [item["receipt"] for item in response.json()["results"]]
    IngestionReceipt.objects.update(created_at=timezone.now() - timedelta(hours=1))
    refuse_in_database()
    return sent


@pytest.fixture
def tasks() -> Iterator[list[list[int]]]:
    """The receipt ids of each task run."""
    runs: list[list[int]] = []

    def record(sender: Any = None, args: Any = None, **kwargs: Any) -> None:
        if sender is not None and sender.name == "chats.ingest_queued":
            runs.append(list(args[0]))

    task_prerun.connect(record, weak=False)
    yield runs
    task_prerun.disconnect(record)


def outcomes(uuids: list[str]) -> list[str]:
    by_uuid = {str(u): o for u, o in IngestionReceipt.objects.filter(uuid__in=uuids).values_list("uuid", "outcome")}
    return [by_uuid[u] for u in uuids]


def requeue(*args: str) -> str:
    call_command("requeue_ingest", *args, stdout=(out := io.StringIO()))
    return out.getvalue()


def test_each_source_gets_its_own_task_and_a_poison_document_holds_up_no_one(
    lost: dict[str, list[str]], tasks: list[list[int]]
) -> None:
    assert "Sent 5 receipt(s) queued" in requeue("--minutes", "15")

    assert outcomes(lost["masterbrain"]) == ["created", "rejected", "created"]
    assert outcomes(lost["other-logger"]) == ["created", "created"]
    sources = [set(IngestionReceipt.objects.filter(pk__in=ids).values_list("source__name", flat=True)) for ids in tasks]
    assert sorted(map(sorted, sources)) == [["masterbrain"], ["other-logger"]]


def test_source_takes_that_sources_receipts_only(lost: dict[str, list[str]]) -> None:
    assert "Sent 2 receipt(s) of source 'other-logger'" in requeue("--source", "other-logger")

    assert outcomes(lost["other-logger"]) == ["created", "created"]
    assert outcomes(lost["masterbrain"]) == ["queued"] * 3


def test_receipt_takes_the_named_receipts_however_recent(lost: dict[str, list[str]]) -> None:
    poison = lost["masterbrain"][1]
    IngestionReceipt.objects.filter(uuid=poison).update(created_at=timezone.now())

    assert "Sent 1 of the 1 receipt(s) named" in requeue("--receipt", poison)

    assert outcomes(lost["masterbrain"]) == ["queued", "rejected", "queued"]
    assert outcomes(lost["other-logger"]) == ["queued", "queued"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--source", "nobody"), "no source is named 'nobody'"),
        (("--receipt", "not-a-uuid"), "--receipt takes a receipt's uuid, not 'not-a-uuid'"),
        (("--minutes", "-1"), "--minutes cannot be negative"),
    ],
)
def test_bad_arguments_are_refused(args: tuple[str, ...], message: str, source: Source) -> None:
    with pytest.raises(CommandError, match=message):
        requeue(*args)
