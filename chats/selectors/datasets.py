"""Reads of datasets: the list, and their exports.

An export is the dataset's frozen lines (`DatasetLine`, written at publication by chats.services.datasets) in
order, and nothing else: no conversation, resolution or message is read, so a dataset exports the same bytes
forever. Before a byte is sent the lines are read once and checked against the SHA-256 kept at publication; a
mismatch is a `DatasetCorrupted` error (HTTP 500 naming the dataset), never a different file. The lines are read
by keyset, BATCH_LINES at a time: a fixed number of queries per batch, in constant memory.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator

from django.db.models import QuerySet

from chats.errors import DomainError
from chats.models import Dataset, DatasetFormat, DatasetLine, Queue

TRAINING = DatasetFormat.TRAINING.value
GOLD = DatasetFormat.GOLD.value
DATASET_FORMATS = (TRAINING, GOLD)
BATCH_LINES = 500

logger = logging.getLogger(__name__)


class DatasetCorrupted(DomainError):
    """A published dataset's stored lines no longer give the SHA-256 kept at publication."""

    status_code = 500


def line_bytes(text: str) -> bytes:
    """A frozen line as the export sends it (and as its SHA-256 is taken)."""
    return (text + "\n").encode()


def datasets_list() -> QuerySet[Dataset]:
    """Every dataset, newest first, with its creator and its queues (a fixed number of queries)."""
    return Dataset.objects.select_related("created_by").prefetch_related("queues").order_by("-created_at", "-id")


def queue_datasets(queue: Queue) -> list[Dataset]:
    """The datasets taken from `queue`, newest first, with their creator (one query)."""
    return list(Dataset.objects.filter(queues=queue).select_related("created_by").order_by("-created_at", "-id"))


def _texts(dataset: Dataset, format: str) -> Iterator[str]:
    last = -1
    while True:
        batch = list(
            DatasetLine.objects.filter(dataset=dataset, format=format, index__gt=last)
            .order_by("index")
            .values_list("index", "text")[:BATCH_LINES]
        )
        for index, text in batch:
            yield text
            last = index
        if len(batch) < BATCH_LINES:
            return


def _corrupted(dataset: Dataset, format: str, digest: str, count: int) -> DatasetCorrupted:
    message = (
        f"dataset {dataset.pk} ({dataset.name!r}): its {format} export gives SHA-256 {digest} over {count} lines, "
        f"but {dataset.sha256_of(format)} over {dataset.item_count} was published; it is not sent"
    )
    logger.error("Dataset export refused: %s", message)
    return DatasetCorrupted([{"path": "", "message": message}])


def dataset_digest(dataset: Dataset, format: str) -> tuple[str, int]:
    """The SHA-256 of the export as the stored lines give it now, and how many lines there are."""
    digest = hashlib.sha256()
    count = 0
    for text in _texts(dataset, format):
        digest.update(line_bytes(text))
        count += 1
    return digest.hexdigest(), count


def dataset_lines(dataset: Dataset, format: str) -> Iterator[bytes]:
    """The dataset's `training` or `gold` JSONL, line by line, as published. Checked before anything is sent
    (raises DatasetCorrupted); the lines are checked again as they are sent, and a difference then (the rows
    changed during the export) breaks the stream off instead of finishing a different file."""
    expected = dataset.sha256_of(format)
    digest, count = dataset_digest(dataset, format)
    if digest != expected or count != dataset.item_count:
        raise _corrupted(dataset, format, digest, count)
    return _checked_stream(dataset, format, expected)


def _checked_stream(dataset: Dataset, format: str, expected: str) -> Iterator[bytes]:
    digest = hashlib.sha256()
    count = 0
    for text in _texts(dataset, format):
        data = line_bytes(text)
        digest.update(data)
        count += 1
        yield data
    if digest.hexdigest() != expected or count != dataset.item_count:
        raise _corrupted(dataset, format, digest.hexdigest(), count)
