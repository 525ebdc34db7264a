"""Reads of datasets: the list with item counts, and their exports streamed batch by batch.

The exports read only what the snapshot copied (answers, correction, provenance) besides the conversations
themselves, so an old dataset exports the same gold answers whatever was resolved since. Each batch of items costs
a fixed number of queries: the items, then the conversations' rows as `iter_canonical` loads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, QuerySet

from chats.export import export_conversation, training_record
from chats.models import Conversation, Dataset, DatasetItem
from chats.selectors.exports import Branch, Exportable, iter_canonical

TRAINING = "training"
GOLD = "gold"
DATASET_FORMATS = (TRAINING, GOLD)
BATCH_ITEMS = 100


def datasets_list() -> QuerySet[Dataset]:
    """Every dataset, newest first, with its creator, its queues and its item count (a fixed number of queries)."""
    return (
        Dataset.objects.select_related("created_by")
        .prefetch_related("queues")
        .annotate(item_count=Count("items", distinct=True))
        .order_by("-created_at", "-id")
    )


def dataset_items(dataset: Dataset) -> QuerySet[DatasetItem]:
    return DatasetItem.objects.filter(dataset=dataset).order_by("id")


def dataset_lines(dataset: Dataset, format: str) -> Iterator[bytes]:
    """JSONL of the dataset's items in snapshot order: training records with the lead's correction applied and
    the provenance as their metadata (`training`), or each conversation in its own format with its gold answers
    (`gold`)."""
    branch: Branch = "active" if format == TRAINING else "all"
    last = 0
    while True:
        items = list(dataset_items(dataset).filter(id__gt=last)[:BATCH_ITEMS])
        if not items:
            return
        ids = {item.conversation_id for item in items}
        loaded = {
            exportable.conversation.pk: exportable
            for exportable in iter_canonical(
                Conversation.objects.filter(pk__in=ids), branch=branch, batch_conversations=BATCH_ITEMS + 1
            )
        }
        for item in items:
            exportable = loaded[item.conversation_id]
            line = (
                _training_line(dataset, item, exportable)
                if format == TRAINING
                else _gold_line(dataset, item, exportable)
            )
            yield (json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()
        if len(items) < BATCH_ITEMS:
            return
        last = items[-1].pk


def provenance(dataset: Dataset, item: DatasetItem, exportable: Exportable) -> dict[str, Any]:
    """Where a line came from: the dataset, the queue, the item, the resolution, the lead and the rubric version."""
    conversation = exportable.conversation
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
    }


def _training_line(dataset: Dataset, item: DatasetItem, exportable: Exportable) -> dict[str, Any]:
    corrections = {item.correction_message_key: item.correction} if item.correction_message_key else {}
    return training_record(
        exportable.canonical, corrections=corrections, provenance=provenance(dataset, item, exportable)
    )


def _gold_line(dataset: Dataset, item: DatasetItem, exportable: Exportable) -> dict[str, Any]:
    conversation = exportable.conversation
    return {
        "provenance": provenance(dataset, item, exportable),
        "answers": item.answers,
        "correction": item.correction,
        "correction_message": item.correction_message_key or None,
        "format": conversation.input_format,
        "document": export_conversation(exportable.canonical, conversation.input_format).document,
    }
