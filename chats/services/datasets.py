"""Datasets: a lead takes a named snapshot of the gold items (resolutions) of one or more queues. The snapshot
copies the answers and corrections in one INSERT ... SELECT, so that it is frozen: a later resolution or a later
snapshot never changes it. Audited like every write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from chats.errors import InvalidInput, NotAllowed
from chats.models import Dataset, DatasetItem, Message, Queue, QueueItem, Resolution, RubricVersion
from chats.roles import person_roles
from chats.services.audit import audit_record, audited_write


def _checked_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 200:
        raise InvalidInput([{"path": "/name", "message": "must be a non-empty string of at most 200 characters"}])
    if Dataset.objects.filter(name=name.strip()).exists():
        raise InvalidInput([{"path": "/name", "message": "a dataset already has this name"}])
    return name.strip()


def _snapshot_sql(n_queues: int) -> str:
    """Every resolution of the given queues, copied with its provenance, in queue name and item order. The
    correction replaces the last visible assistant message of the active path, as it is now. Portable SQL (an
    `IN` list, not PostgreSQL's `ANY`), so that SQLite runs it too."""
    queues = ", ".join(["%s"] * n_queues)
    return f"""
        INSERT INTO {DatasetItem._meta.db_table} (
            dataset_id, conversation_id, queue_item_id, queue_id, queue_name, rubric_version_id,
            rubric_version_number, resolution_id, lead_id, lead_username, answers, correction,
            correction_message_key, resolved_at, created_at
        )
        SELECT %s, qi.conversation_id, qi.id, q.id, q.name, rv.id, rv.version, r.id, r.lead_id, u.username,
            r.answers, r.correction,
            CASE WHEN r.correction = '' THEN '' ELSE COALESCE((
                SELECT m.key FROM {Message._meta.db_table} m
                WHERE m.conversation_id = qi.conversation_id AND m.on_active_path AND NOT m.hidden
                    AND m.role = 'assistant'
                ORDER BY m.depth DESC, m.position DESC LIMIT 1
            ), '') END,
            r.created_at, %s
        FROM {Resolution._meta.db_table} r
        JOIN {QueueItem._meta.db_table} qi ON qi.id = r.item_id
        JOIN {Queue._meta.db_table} q ON q.id = qi.queue_id
        JOIN {RubricVersion._meta.db_table} rv ON rv.id = r.rubric_version_id
        JOIN {User._meta.db_table} u ON u.id = r.lead_id
        WHERE qi.queue_id IN ({queues})
        ORDER BY q.name, qi.created_at, qi.id
    """


@audited_write
def dataset_snapshot_create(*, actor: User, name: str, queues: Sequence[Queue], description: str = "") -> Dataset:
    """A new dataset of every resolved item of `queues`, as resolved now. Leads only; refused when the name is
    taken or when the queues have no resolved item."""
    if not person_roles(actor).can_lead:
        raise NotAllowed("Only leads take dataset snapshots.")
    name = _checked_name(name)
    if not isinstance(description, str):
        raise InvalidInput([{"path": "/description", "message": "must be a string"}])
    queue_ids = sorted({queue.pk for queue in queues})
    if not queue_ids:
        raise InvalidInput([{"path": "/queues", "message": "name at least one queue"}])
    now = timezone.now()
    dataset = Dataset.objects.create(name=name, description=description, created_by=actor, created_at=now)
    dataset.queues.set(queue_ids)
    with connection.cursor() as cursor:
        cursor.execute(_snapshot_sql(len(queue_ids)), [dataset.pk, now, *queue_ids])
        count = cursor.rowcount
    if count == 0:
        raise InvalidInput([{"path": "/queues", "message": "these queues have no resolved item: nothing to snapshot"}])
    audit_record(
        actor=actor,
        action="dataset.created",
        target_type="dataset",
        target_id=dataset.pk,
        after={
            "name": name,
            "description": description,
            "queues": sorted(Queue.objects.filter(pk__in=queue_ids).values_list("name", flat=True)),
            "items": count,
        },
    )
    return dataset
