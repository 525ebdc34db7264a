"""The audit table's review paths (chats.services.review): the review status, and team review's queues, items,
leases, reviews and resolutions, through the services, the API and the pages. The machinery is in
tests/security/audit_paths.py."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chats.models import Conversation, Lease, Queue, QueueItem, Review, Source
from chats.services import review as review_services
from chats.services.audit import audit_scope
from tests.security.audit_paths import (
    REVIEW_QUESTIONS,
    World,
    WritePath,
    check_write_path,
    declared_in,
    expect,
    make_world,
    review_queue,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- The review page


@write_path("POST chats:review_status", "service conversation_set_review_status")
def review_page_sets_the_review_status(w: World) -> list[dict[str, Any]]:
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/status/", {"status": "reviewed"})
    assert response.status_code == 302
    return [
        expect(
            "conversation.status_changed",
            w.reviewer,
            "conversation",
            w.conversation.uuid,
            before={"review_status": "unreviewed"},
            after={"review_status": "reviewed"},
            conversation=w.conversation.uuid,
        )
    ]


# --- Team review: queues, items, leases, reviews and resolutions (services; the lead is the admin)


def _lease_row(w: World, queue: Queue, action: str, actor: User) -> dict[str, Any]:
    item = QueueItem.objects.get(queue=queue)
    after = {"reviewer": w.reviewer.username, "expires_at": ANY}
    return expect(action, actor, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)


@write_path("service queue_create")
def lead_creates_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_services.queue_create(
        actor=w.admin, name="Answers", questions=REVIEW_QUESTIONS, reviews_per_item=2, members=[w.reviewer]
    )
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 2,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", queue.pk, after=after)]


@write_path("service queue_update")
def lead_changes_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    assert review_services.queue_update(actor=w.admin, queue=queue, reviews_per_item=3, members=[])
    before = {"reviews_per_item": 1, "members": [w.reviewer.username]}
    after = {"reviews_per_item": 3, "members": []}
    return [expect("queue.updated", w.admin, "queue", queue.pk, before=before, after=after)]


@write_path("service queue_add_conversations")
def lead_adds_conversations_to_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    added = review_services.queue_add_conversations(
        actor=w.admin, queue=queue, conversations=Conversation.objects.all()
    )
    assert added == 1  # the world's chat; its conversation was in the queue already
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


@write_path("service item_lease_next")
def reviewer_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    assert review_services.item_lease_next(queue=queue, reviewer=w.reviewer) is not None
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("service item_assign")
def lead_assigns_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    review_services.item_assign(actor=w.admin, item=QueueItem.objects.get(queue=queue), reviewer=w.reviewer)
    return [_lease_row(w, queue, "queue_item.assigned", w.admin)]


@write_path("service item_release")
def lead_releases_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    with audit_scope():
        Lease.objects.create(
            conversation_id=item.conversation_id,
            item=item,
            reviewer=w.reviewer,
            expires_at=timezone.now() + timedelta(minutes=5),
        )
    assert review_services.item_release(actor=w.admin, item=item) == 1
    before = {"reviewers": [w.reviewer.username]}
    return [
        expect("queue_item.released", w.admin, "queue_item", item.pk, before=before, conversation=w.conversation.uuid)
    ]


@write_path("service review_save_draft")
def reviewer_saves_a_draft_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    review = review_services.review_save_draft(reviewer=w.reviewer, item=item, answers={"correct": "no"})
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "no"}}
    return [
        expect("review.draft_saved", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("service review_submit")
def reviewer_submits_a_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    review = review_services.review_submit(reviewer=w.reviewer, item=item, answers={"correct": "yes"})
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    return [expect("review.submitted", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)]


@write_path("service item_resolve")
def lead_resolves_an_item(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    review_services.item_resolve(actor=w.admin, item=item, answers={"correct": "no"}, correction="Use 58 °C.")
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Use 58 °C."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST api:queue-list", "service queue_create")
def api_creates_a_queue(w: World) -> list[dict[str, Any]]:
    body = {"name": "Answers", "questions": REVIEW_QUESTIONS, "members": [w.reviewer.username]}
    response = w.api(w.admin).post("/api/v1/queues/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 1,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", response.json()["id"], after=after)]


@write_path("POST api:queue-items", "service queue_add_conversations")
def api_adds_conversations_to_a_queue_by_filters(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    body = {"filters": {"source": w.source.name}}
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/items/", data=json.dumps(body), content_type="application/json"
    )
    assert response.json() == {"added": 1}
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


# --- Team review's pages: the same services, through the forms a person posts

_RUBRIC_POST = {
    "rubric-TOTAL_FORMS": "1",
    "rubric-INITIAL_FORMS": "0",
    "rubric-0-key": "correct",
    "rubric-0-prompt": "Correct?",
    "rubric-0-type": "categorical",
    "rubric-0-options": "yes\nno",
    "rubric-0-target": "conversation",
}


def _posted(client: Client, url: str, data: dict[str, Any]) -> None:
    response = client.post(url, data)
    assert response.status_code in (200, 302), response.content[:500]


@write_path("POST chats:queue_create", "service queue_create")
def page_creates_a_queue(w: World) -> list[dict[str, Any]]:
    body = {"name": "Answers", "instructions": "", "reviews_per_item": "2", "members": [w.reviewer.username]}
    _posted(w.page(w.admin), reverse("chats:queue_create"), {**body, **_RUBRIC_POST})
    after = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": 2,
        "members": [w.reviewer.username],
        "rubric_version": 1,
        "questions": REVIEW_QUESTIONS,
    }
    return [expect("queue.created", w.admin, "queue", Queue.objects.get(name="Answers").pk, after=after)]


@write_path("POST chats:queue_update", "service queue_update")
def page_changes_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    body = {"name": "Answers", "instructions": "", "reviews_per_item": "3"}
    _posted(w.page(w.admin), reverse("chats:queue_update", args=[queue.pk]), {**body, **_RUBRIC_POST})
    before = {"reviews_per_item": 1, "members": [w.reviewer.username]}
    after = {"reviews_per_item": 3, "members": []}
    return [expect("queue.updated", w.admin, "queue", queue.pk, before=before, after=after)]


@write_path("POST chats:queue_add", "service queue_add_conversations")
def page_adds_the_filters_conversations_to_a_queue(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    _posted(w.page(w.admin), reverse("chats:queue_add"), {"queue": str(queue.pk), "scope": "filters"})
    return [expect("queue.items_added", w.admin, "queue", queue.pk, after={"added": 1})]


@write_path("POST chats:queue_next", "service item_lease_next")
def page_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    _posted(w.page(w.reviewer), reverse("chats:queue_next", args=[queue.pk]), {})
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("POST chats:queue_assign", "service item_assign", "service item_release")
def page_assigns_then_releases_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    url, page = reverse("chats:queue_assign", args=[queue.pk]), w.page(w.admin)
    _posted(page, url, {"item": str(item.pk), "reviewer": w.reviewer.username, "action": "assign"})
    assigned = _lease_row(w, queue, "queue_item.assigned", w.admin)
    _posted(page, url, {"item": str(item.pk), "action": "release"})
    before = {"reviewers": [w.reviewer.username]}
    released = expect(
        "queue_item.released", w.admin, "queue_item", item.pk, before=before, conversation=w.conversation.uuid
    )
    return [assigned, released]


@write_path("POST chats:review_draft", "service review_save_draft")
def page_saves_a_draft_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    _posted(w.page(w.reviewer), reverse("chats:review_draft", args=[item.queue_id, item.pk]), {"q.correct": "no"})
    review = Review.objects.get(item=item, reviewer=w.reviewer)
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "no"}}
    return [
        expect("review.draft_saved", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST chats:review_submit", "service review_submit")
def page_submits_a_review(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    _posted(w.page(w.reviewer), reverse("chats:review_submit", args=[item.queue_id, item.pk]), {"q.correct": "yes"})
    review = Review.objects.get(item=item, reviewer=w.reviewer)
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    return [expect("review.submitted", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)]


@write_path("POST chats:item_resolve", "service item_resolve")
def page_resolves_an_item(w: World) -> list[dict[str, Any]]:
    item = QueueItem.objects.get(queue=review_queue(w))
    body = {"q.correct": "no", "correction": "Use 58 °C."}
    _posted(w.page(w.admin), reverse("chats:item_resolve", args=[item.queue_id, item.pk]), body)
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Use 58 °C."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


# --- Team review through the API


@write_path("POST api:queue-next", "service item_lease_next")
def api_leases_the_next_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    assert w.api(w.reviewer).post(f"/api/v1/queues/{queue.pk}/next/").status_code == 200
    return [_lease_row(w, queue, "queue_item.leased", w.reviewer)]


@write_path("POST api:queue-item-reviews", "service review_submit")
def api_submits_a_review(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    response = w.api(w.reviewer).post(
        f"/api/v1/queues/{queue.pk}/items/{item.pk}/reviews/",
        data=json.dumps({"answers": {"correct": "yes"}}),
        content_type="application/json",
    )
    assert response.status_code == 201
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "yes"}}
    review_id = response.json()["id"]
    return [expect("review.submitted", w.reviewer, "review", review_id, after=after, conversation=w.conversation.uuid)]


@write_path("POST api:queue-item-resolution", "service item_resolve")
def api_resolves_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    response = w.api(w.admin).post(
        f"/api/v1/queues/{queue.pk}/items/{item.pk}/resolution/",
        data=json.dumps({"answers": {"correct": "no"}, "correction": "Right."}),
        content_type="application/json",
    )
    assert response.status_code == 200
    after = {"rubric_version": 1, "answers": {"correct": "no"}, "correction": "Right."}
    return [
        expect("queue_item.resolved", w.admin, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)
    ]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
