"""One table of tampered cursors, sent to every paginated API list: each is a 400 naming `cursor`, never a 500 and
never a page. Every cursor is written and read by `chats.cursors`; the lists join this test by being paginated
(`test_every_paginated_list_is_in_the_table`)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats import cursors
from chats.api.pagination import FeedbackPagination, QueueItemPagination
from chats.models import InjectedArtifact, Queue, Source
from chats.services.feedback import feedback_submit
from tests.factories import make_conversation, make_record_qa
from tests.factories.review import fill_queue, make_lead, make_queue
from tests.security.permission_matrix import url_views

pytestmark = pytest.mark.django_db


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _drf_kind(pagination: type) -> str:
    return f"{pagination.__module__}.{pagination.__qualname__}"


# Every way a client can hand back something that is not a cursor this list gave out.
TAMPERED: list[str] = [
    _b64("p=garbage"),  # DRF's own format with a position no column compares with
    _b64("o=5&r=1&p=garbage"),
    _b64("p=" + "9" * 30),
    _b64("p=²"),
    "n." + _b64("2026-01-01T00:00:00+00:00|1"),  # the old unsigned conversation cursor
    "n.garbage",
    "p.",
    "garbage",
    "!!!not base64!!!",
    "%%%",
    "²",
    "n.²",
    "A" * 100_000,  # huge
    "n." + "A" * 5_000,
    '["x"]:signature',
    "WyJ4Il0.not-a-signature",
    cursors.encode("another list", [0, False, "1"]),  # signed, for another list
    "n." + cursors.encode("another list", ["2026-01-01T00:00:00+00:00", 1]),
    cursors.encode(_drf_kind(FeedbackPagination), [0, False, "1"])[:-2] + "xx",  # a signature altered
    "n." + cursors.encode("conversations", ["2026-01-01T00:00:00+00:00", 1])[:-2] + "xx",
    cursors.encode(_drf_kind(FeedbackPagination), [0, False, "not an id"]),  # signed with a position off type
    cursors.encode(_drf_kind(FeedbackPagination), [10**9, False, "1"]),  # an offset past the cutoff
    cursors.encode(_drf_kind(FeedbackPagination), ["0", "yes", "1"]),
    cursors.encode(_drf_kind(QueueItemPagination), [0, False, "yesterday"]),
    cursors.encode(_drf_kind(QueueItemPagination), [0, False, 12]),
    "n." + cursors.encode("conversations", ["0001-01-01T00:00:00+23:59", 1]),  # not a real instant
    "n." + cursors.encode("conversations", ["2026-01-01T00:00:00+00:00", 2**70]),
    "n." + cursors.encode("conversations", ["2026-01-01T00:00:00", 1]),  # no offset
    "n." + cursors.encode("conversations", {"k": 1}),  # type: ignore[arg-type]  # not a list
    "a\x00b",  # NUL: refused by the middleware, naming the parameter too
]
# Already percent-encoded: bytes that are not UTF-8 (a lone surrogate's, an overlong NUL, a byte order mark's).
RAW_TAMPERED = ["%ED%A0%80", "%C0%80", "%FF%FE", "n.%ED%A0%80"]
QUERIES = [f"cursor={quote(cursor, safe='')}" for cursor in TAMPERED] + [f"cursor={raw}" for raw in RAW_TAMPERED]


@pytest.fixture
def lists(source: Source, reviewer: User, other_reviewer: User, auditor: User) -> dict[str, str]:
    """The route of every paginated API list -> a URL of it that holds rows, readable by the auditor."""
    conversation = make_conversation(source, n_messages=3)
    make_record_qa(source)
    artifact = InjectedArtifact.objects.order_by("pk").first()
    assert artifact is not None
    feedback_submit(author=reviewer, conversation=conversation, message=None, score=1, labels=[], comment="ok")
    lead = make_lead()
    queue: Queue = make_queue(lead, [reviewer, other_reviewer])
    fill_queue(queue, lead, source, 2)
    auditor.is_staff = True
    auditor.save(update_fields=["is_staff"])
    return {
        "api/v1/conversations/": "/api/v1/conversations/",
        "api/v1/feedback/": "/api/v1/feedback/",
        "api/v1/export/jobs/": "/api/v1/export/jobs/",
        "api/v1/queues/<int:pk>/items/": f"/api/v1/queues/{queue.pk}/items/",
        "api/v1/artifacts/<artifact_id:artifact_id>/": f"/api/v1/artifacts/{quote(artifact.artifact_id, safe='')}/",
    }


def _client(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def _paginated_routes() -> set[str]:
    """Routes whose view pages with a cursor: a `pagination_class`, or a paginator of chats.api.pagination."""
    import inspect

    from chats.api import pagination

    found = set()
    for key, callback in url_views():
        view = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
        if view is None or not key.startswith("api:"):
            continue
        actions = getattr(callback, "actions", None)
        if actions is not None:  # a viewset's route: only its list pages
            initkwargs = getattr(callback, "initkwargs", {})
            if "list" in actions.values() and initkwargs.get("pagination_class", view.pagination_class) is not None:
                found.add(key)
            continue
        source = inspect.getsource(view)
        uses = [name for name in dir(pagination) if name.endswith("Pagination") and name in source]
        if getattr(view, "pagination_class", None) is not None or uses:
            found.add(key)
    return found


def test_every_paginated_list_is_in_the_table(lists: dict[str, str]) -> None:
    from django.urls import resolve

    covered = {resolve(urlsplit(url).path).view_name for url in lists.values()}
    assert _paginated_routes() <= covered, _paginated_routes() - covered


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_a_tampered_cursor_is_a_400_naming_cursor_on_every_list(
    lists: dict[str, str], auditor: User, query: str
) -> None:
    client = _client(auditor)
    for url in lists.values():
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400, (url, query[:80], response.content[:300])
        assert any("cursor" in error["path"] for error in response.json()["errors"]), (url, response.json())


def _cursor_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["cursor"][0]


@pytest.mark.parametrize("page_size", ["0", "201", "²", "\uff11", "1_0", "-1", "9" * 30])
def test_a_page_size_outside_the_range_or_in_other_digits_is_a_400(
    lists: dict[str, str], auditor: User, page_size: str
) -> None:
    client = _client(auditor)
    for url in (lists["api/v1/conversations/"], lists["api/v1/queues/<int:pk>/items/"]):
        response = client.get(url, {"page_size": page_size})
        assert response.status_code == 400, (url, page_size)
        assert response.json()["errors"][0]["path"] == "/page_size"


def test_the_cursors_given_out_are_signed_and_lead_on(lists: dict[str, str], auditor: User) -> None:
    client = _client(auditor)
    items = lists["api/v1/queues/<int:pk>/items/"]
    first: dict[str, Any] = client.get(items, {"page_size": 1}).json()
    assert len(first["results"]) == 1 and first["next"]
    token = _cursor_of(first["next"])
    assert cursors.decode(token, _drf_kind(QueueItemPagination)) is not None
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1 and second["results"][0]["id"] != first["results"][0]["id"]
    # The same signed cursor is not accepted by another list.
    response = client.get(lists["api/v1/feedback/"], {"cursor": token})
    assert response.status_code == 400


def test_an_empty_cursor_is_the_first_page_on_every_list(lists: dict[str, str], auditor: User) -> None:
    client = _client(auditor)
    for url in lists.values():
        assert client.get(f"{url}?cursor=").json() == client.get(url).json(), url
