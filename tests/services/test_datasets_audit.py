"""The audit table's dataset paths (chats.services.datasets): a lead's snapshot of the resolved items, and its
export. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Dataset, DatasetItem, Queue, QueueItem, Resolution, RubricVersion, Source
from chats.services import datasets as dataset_services
from chats.services.audit import CommandActor, audit_scope
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


# --- Datasets: a lead's snapshot of the resolved items, and its export


def _resolved_queue(w: World) -> Queue:
    """The review queue with its item resolved by the admin; its own events are not the path's."""
    queue = review_queue(w)
    with audit_scope():
        item = QueueItem.objects.get(queue=queue)
        rubric = RubricVersion.objects.get(queue=queue)
        Resolution.objects.create(
            conversation_id=item.conversation_id,
            item=item,
            lead=w.admin,
            rubric_version=rubric,
            answers={"correct": "no"},
        )
    return queue


def _snapshot_after(name: str) -> dict[str, Any]:
    dataset = Dataset.objects.get(name=name)
    assert len(dataset.training_sha256) == len(dataset.gold_sha256) == 64
    return {
        "name": name,
        "description": "",
        "queues": ["Answers"],
        "items": 1,
        "training_sha256": dataset.training_sha256,
        "gold_sha256": dataset.gold_sha256,
    }


@write_path("service dataset_snapshot_create")
def lead_takes_a_dataset_snapshot(w: World) -> list[dict[str, Any]]:
    queue = _resolved_queue(w)
    dataset = dataset_services.dataset_snapshot_create(actor=w.admin, name="v1", queues=[queue])
    return [expect("dataset.created", w.admin, "dataset", dataset.pk, after=_snapshot_after("v1"))]


@write_path("POST api:dataset-list", "service dataset_snapshot_create")
def api_takes_a_dataset_snapshot(w: World) -> list[dict[str, Any]]:
    queue = _resolved_queue(w)
    body = {"name": "v1", "queues": [queue.pk]}
    response = w.api(w.admin).post("/api/v1/datasets/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    return [expect("dataset.created", w.admin, "dataset", response.json()["id"], after=_snapshot_after("v1"))]


@write_path("GET api:dataset-export", "service dataset_export_stream", "service export_record")
def api_exports_a_dataset(w: World) -> list[dict[str, Any]]:
    with audit_scope():  # published with no item: its exports are empty
        empty = hashlib.sha256(b"").hexdigest()
        dataset = Dataset.objects.create(name="v1", created_by=w.admin, training_sha256=empty, gold_sha256=empty)
    response = w.api(w.admin).get(f"/api/v1/datasets/{dataset.pk}/export/?format=gold")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "gold", "filters": {"dataset": dataset.pk, "name": "v1"}, "count": 0}
    return [expect("conversation.exported", w.admin, "dataset", "filtered", after=after)]


@write_path("service dataset_freeze_unfrozen")
def migration_freezes_a_dataset_taken_before_freezing(w: World) -> list[dict[str, Any]]:
    queue = _resolved_queue(w)
    with audit_scope():  # as the migration finds a dataset taken before: its items, no lines, no SHA-256
        resolution = Resolution.objects.get(item__queue=queue)
        dataset = Dataset.objects.create(name="v0", created_by=w.admin)
        DatasetItem.objects.create(
            dataset=dataset,
            conversation_id=resolution.conversation_id,
            queue_item_id=resolution.item_id,
            queue=queue,
            queue_name=queue.name,
            rubric_version=resolution.rubric_version,
            rubric_version_number=1,
            resolution_id=resolution.pk,
            lead=w.admin,
            lead_username=w.admin.get_username(),
            answers=resolution.answers,
            resolved_at=resolution.created_at,
        )
    assert dataset_services.dataset_freeze_unfrozen(actor=CommandActor("migrate")) == 1
    frozen = Dataset.objects.get(pk=dataset.pk)
    after = {"items": 1, "training_sha256": frozen.training_sha256, "gold_sha256": frozen.gold_sha256}
    return [expect("dataset.frozen", CommandActor("migrate").get_username(), "dataset", dataset.pk, after=after)]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
