"""Datasets: a lead publishes a named snapshot of the gold items (resolutions) of one or more queues, frozen by
content. Publishing writes, for every resolved item, its answers, correction and provenance (`DatasetItem`) and
both export lines of the path its resolution pinned (`DatasetLine`: the training record with the correction
applied, and the gold line with the conversation's document cut to that path), then keeps each export's SHA-256.
The export reads only those lines, so it is the same bytes forever: a later resolution, a later snapshot, a
conversation that grows, branches or is deleted changes nothing in it. Audited like every write."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput
from chats.export import active_path, export_conversation, training_record
from chats.formats import canonical as c
from chats.json_types import JSONMapping, JSONObject
from chats.models import Conversation, Dataset, DatasetFormat, DatasetItem, DatasetLine, Queue, Resolution
from chats.review.pinning import path_sha256, path_to
from chats.roles import lead_required, person_roles
from chats.selectors.datasets import line_bytes
from chats.selectors.exports import Exportable, iter_canonical
from chats.services.audit import Actor, audit_record, audited_write

BATCH_ITEMS = 100


def _checked_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 200:
        raise InvalidInput([{"path": "/name", "message": "must be a non-empty string of at most 200 characters"}])
    if Dataset.objects.filter(name=name.strip()).exists():
        raise InvalidInput([{"path": "/name", "message": "a dataset already has this name"}])
    return name.strip()


def _line_text(line: JSONMapping) -> str:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)


def _provenance(dataset: Dataset, item: DatasetItem, conversation: Conversation) -> JSONObject:
    """Where a line came from: the dataset, the conversation, the queue, the item, the resolution, the lead, the
    rubric version, and the path judged (its last message and SHA-256)."""
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "conversation": str(conversation.uuid),
        "source": conversation.source.name,
        "external_id": conversation.external_id,
        "queue": {"id": item.queue_id, "name": item.queue_name},
        "item": item.queue_item_id,
        "resolution": item.resolution_id,
        "lead": item.lead_username,
        "rubric_version": item.rubric_version_number,
        "resolved_at": item.resolved_at.isoformat(),
        "reviewed_leaf": item.pinned_leaf_key,
        "path_sha256": item.pinned_path_sha256,
    }


def _cut_to_path(conversation: c.Conversation, path: list[c.Message]) -> c.Conversation:
    """The conversation with the messages of `path` only (and the artifacts and feedback on them), ending there."""
    keys = {message.key for message in path}
    return dataclasses.replace(
        conversation,
        messages=list(path),
        active_leaf_key=path[-1].key,
        artifacts=[artifact for artifact in conversation.artifacts if artifact.message_key in keys],
        feedback=[f for f in conversation.feedback if f.message_key is None or f.message_key in keys],
    )


def _settle(item: DatasetItem, exportable: Exportable, *, new: bool) -> c.Conversation:
    """The conversation cut to the item's pinned path. A new item gets its path's SHA-256 (checked against the
    resolution's) and the message its correction replaces (the last visible assistant message of the path); an
    item without a pin (taken before reviews pinned paths) is exported on the active path."""
    canonical = exportable.canonical
    leaf_key = item.pinned_leaf_key or (active_path(canonical)[-1].key if canonical.messages else "")
    path = path_to(canonical.messages, leaf_key)
    digest = path_sha256(path)
    if not path or (item.pinned_path_sha256 and item.pinned_path_sha256 != digest):
        # Messages are never edited or deleted one by one, so a reviewed path cannot change; refuse if it did.
        problem = "has no reviewed path" if not path else "has a reviewed path whose content changed since review"
        raise InvalidInput([{"path": "/queues", "message": f"item {item.queue_item_id} {problem}"}])
    if new:
        item.pinned_leaf_key, item.pinned_path_sha256 = leaf_key, digest
        if item.correction:
            answers = [m for m in path if m.role == "assistant" and not m.hidden]
            item.correction_message_key = answers[-1].key if answers else ""
    return _cut_to_path(canonical, path)


def _lines(dataset: Dataset, item: DatasetItem, exportable: Exportable, frozen: c.Conversation) -> dict[str, str]:
    conversation = exportable.conversation
    provenance = _provenance(dataset, item, conversation)
    corrections = {item.correction_message_key: item.correction} if item.correction_message_key else {}
    gold: JSONObject = {
        "provenance": provenance,
        "answers": item.answers,
        "correction": item.correction,
        "correction_message": item.correction_message_key or None,
        "format": conversation.input_format,
        "document": export_conversation(frozen, conversation.input_format).document,
    }
    return {
        DatasetFormat.TRAINING: _line_text(training_record(frozen, corrections=corrections, provenance=provenance)),
        DatasetFormat.GOLD: _line_text(gold),
    }


class _Freezer:
    """Writes a dataset's lines batch by batch, in item order, and sums up each export's SHA-256."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.count = 0
        self.hashes = {format: hashlib.sha256() for format in DatasetFormat.values}

    def loaded(self, items: Sequence[DatasetItem]) -> dict[int, Exportable]:
        """The items' conversations, whole trees, as the exporters take them (a fixed number of queries)."""
        ids = {item.conversation_id for item in items}
        conversations = Conversation.objects.filter(pk__in=ids)
        return {
            e.conversation.pk: e for e in iter_canonical(conversations, branch="all", batch_conversations=len(ids) + 1)
        }

    def add(self, items: Sequence[DatasetItem], *, new: bool) -> None:
        loaded = self.loaded(items)
        settled = [(item, _settle(item, loaded[item.conversation_id], new=new)) for item in items]
        if new:
            DatasetItem.objects.bulk_create([item for item, _ in settled])
        rows = []
        for item, frozen in settled:
            exportable = loaded[item.conversation_id]
            for format, text in _lines(self.dataset, item, exportable, frozen).items():
                self.hashes[format].update(line_bytes(text))
                rows.append(
                    DatasetLine(
                        dataset=self.dataset,
                        format=format,
                        index=self.count,
                        conversation_uuid=exportable.conversation.uuid,
                        text=text,
                    )
                )
            self.count += 1
        DatasetLine.objects.bulk_create(rows)

    def finish(self) -> None:
        """Keep the item count and both exports' SHA-256 on the dataset."""
        self.dataset.item_count = self.count
        self.dataset.training_sha256 = self.hashes[DatasetFormat.TRAINING].hexdigest()
        self.dataset.gold_sha256 = self.hashes[DatasetFormat.GOLD].hexdigest()
        self.dataset.save(update_fields=["item_count", "training_sha256", "gold_sha256"])


def _resolutions(queue_ids: list[int]) -> QuerySet[Resolution]:
    return Resolution.objects.filter(item__queue_id__in=queue_ids).select_related(
        "item__queue", "rubric_version", "lead"
    )


def _item_of(dataset: Dataset, resolution: Resolution, now: datetime) -> DatasetItem:
    queue_item = resolution.item
    return DatasetItem(
        dataset=dataset,
        conversation_id=resolution.conversation_id,
        queue_item=queue_item,
        queue=queue_item.queue,
        queue_name=queue_item.queue.name,
        rubric_version=resolution.rubric_version,
        rubric_version_number=resolution.rubric_version.version,
        resolution_id=resolution.pk,
        lead=resolution.lead,
        lead_username=resolution.lead.get_username(),
        answers=resolution.answers,
        correction=resolution.correction,
        pinned_leaf_key=resolution.pinned_leaf_key,
        pinned_path_sha256=resolution.pinned_path_sha256,
        resolved_at=resolution.created_at,
        created_at=now,
    )


@audited_write
def dataset_snapshot_create(*, actor: User, name: str, queues: Sequence[Queue], description: str = "") -> Dataset:
    """A new dataset of every resolved item of `queues` (in queue name and item order), frozen by content: each
    item on the path its resolution pinned, as resolved now. Leads only; refused when the name is taken or when the
    queues have no resolved item."""
    lead_required(person_roles(actor), "Only leads take dataset snapshots.")
    name = _checked_name(name)
    if not isinstance(description, str):
        raise InvalidInput([{"path": "/description", "message": "must be a string"}])
    queue_ids = sorted({queue.pk for queue in queues})
    if not queue_ids:
        raise InvalidInput([{"path": "/queues", "message": "name at least one queue"}])
    order = list(
        _resolutions(queue_ids)
        .order_by("item__queue__name", "item__created_at", "item_id")
        .values_list("pk", flat=True)
    )
    if not order:
        raise InvalidInput([{"path": "/queues", "message": "these queues have no resolved item: nothing to snapshot"}])
    now = timezone.now()
    dataset = Dataset.objects.create(name=name, description=description, created_by=actor, created_at=now)
    dataset.queues.set(queue_ids)
    freezer = _Freezer(dataset)
    for start in range(0, len(order), BATCH_ITEMS):
        batch = order[start : start + BATCH_ITEMS]
        found = _resolutions(queue_ids).in_bulk(batch)
        freezer.add([_item_of(dataset, found[pk], now) for pk in batch], new=True)
    freezer.finish()
    audit_record(
        actor=actor,
        action=AuditAction.DATASET_CREATED,
        target_type="dataset",
        target_id=dataset.pk,
        after={
            "name": name,
            "description": description,
            "queues": sorted(Queue.objects.filter(pk__in=queue_ids).values_list("name", flat=True)),
            "items": freezer.count,
            "training_sha256": dataset.training_sha256,
            "gold_sha256": dataset.gold_sha256,
        },
    )
    return dataset


@audited_write
def dataset_freeze_unfrozen(*, actor: Actor) -> int:
    """Freeze the datasets taken before datasets were frozen by content (no lines, no SHA-256 yet): their items'
    conversations as they are now, on the active path. Run once by the migration that added the lines; each
    dataset frozen is recorded (`dataset.frozen`, with its SHA-256). How many datasets it froze."""
    frozen = 0
    for dataset in Dataset.objects.filter(training_sha256="").order_by("id"):
        freezer = _Freezer(dataset)
        items = list(DatasetItem.objects.filter(dataset=dataset).order_by("id"))
        for start in range(0, len(items), BATCH_ITEMS):
            freezer.add(items[start : start + BATCH_ITEMS], new=False)
        freezer.finish()
        audit_record(
            actor=actor,
            action=AuditAction.DATASET_FROZEN,
            target_type="dataset",
            target_id=dataset.pk,
            after={
                "items": freezer.count,
                "training_sha256": dataset.training_sha256,
                "gold_sha256": dataset.gold_sha256,
            },
        )
        frozen += 1
    return frozen
