"""The audit table's paths of the queue API's new writes (chats.api.review_views: a queue's settings;
chats.api.review_item_views: lease assignment and release, drafts) and of a queue's lease time
(chats.services.review.queue_set_lease_minutes). The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from chats.models import Lease, Queue, QueueItem, Review, Source
from chats.services import review as review_services
from chats.services.audit import audit_scope
from tests.security.audit_paths import (
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


def _send(w: World, user: User, method: str, url: str, body: Any) -> Any:
    return w.api(user).generic(method, url, data=json.dumps(body), content_type="application/json")


def _lease_row(w: World, queue: Queue, action: str, actor: User) -> dict[str, Any]:
    item = QueueItem.objects.get(queue=queue)
    after = {"reviewer": w.reviewer.username, "expires_at": ANY}
    return expect(action, actor, "queue_item", item.pk, after=after, conversation=w.conversation.uuid)


@write_path("service queue_set_lease_minutes")
def lead_sets_a_queues_lease_time(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    assert review_services.queue_set_lease_minutes(actor=w.admin, queue=queue, lease_minutes=45)
    assert not review_services.queue_set_lease_minutes(actor=w.admin, queue=queue, lease_minutes=45)
    return [
        expect("queue.updated", w.admin, "queue", queue.pk, before={"lease_minutes": 30}, after={"lease_minutes": 45})
    ]


@write_path("PATCH api:queue-detail", "service queue_update", "service queue_set_lease_minutes")
def api_changes_a_queue_and_its_lease_time(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    response = _send(w, w.admin, "PATCH", f"/api/v1/queues/{queue.pk}/", {"reviews_per_item": 2, "lease_minutes": 10})
    assert response.status_code == 200, response.json()
    return [
        expect(
            "queue.updated", w.admin, "queue", queue.pk, before={"reviews_per_item": 1}, after={"reviews_per_item": 2}
        ),
        expect("queue.updated", w.admin, "queue", queue.pk, before={"lease_minutes": 30}, after={"lease_minutes": 10}),
    ]


@write_path("POST api:queue-item-assign", "service item_assign")
def api_assigns_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/assign/"
    assert _send(w, w.admin, "POST", url, {"reviewer": w.reviewer.username}).status_code == 200
    return [_lease_row(w, queue, "queue_item.assigned", w.admin)]


@write_path("POST api:queue-item-release", "service item_release")
def api_releases_an_item(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    with audit_scope():
        Lease.objects.create(
            conversation_id=item.conversation_id,
            item=item,
            reviewer=w.reviewer,
            expires_at=timezone.now() + timedelta(minutes=5),
        )
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/release/"
    response = _send(w, w.admin, "POST", url, {"reviewer": w.reviewer.username})
    assert response.json() == {"released": 1}
    before = {"reviewers": [w.reviewer.username]}
    return [
        expect("queue_item.released", w.admin, "queue_item", item.pk, before=before, conversation=w.conversation.uuid)
    ]


@write_path("PUT api:queue-item-draft", "service review_save_draft")
def api_saves_a_draft_review(w: World) -> list[dict[str, Any]]:
    queue = review_queue(w)
    item = QueueItem.objects.get(queue=queue)
    url = f"/api/v1/queues/{queue.pk}/items/{item.pk}/draft/"
    assert _send(w, w.reviewer, "PUT", url, {"answers": {"correct": "no"}}).status_code == 200
    review = Review.objects.get(item=item, reviewer=w.reviewer)
    after = {"item": item.pk, "rubric_version": 1, "answers": {"correct": "no"}}
    return [
        expect("review.draft_saved", w.reviewer, "review", review.pk, after=after, conversation=w.conversation.uuid)
    ]


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
