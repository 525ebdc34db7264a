"""Dataset snapshots: frozen copies of the gold answers, set-based, audited, refused when empty, duplicate or not
taken by a lead."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from chats.errors import InvalidInput, NotAllowed
from chats.models import AuditEvent, DatasetItem, QueueItem, Source
from chats.services.datasets import dataset_snapshot_create
from chats.services.review import item_resolve
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db


def test_a_snapshot_copies_the_gold_answers_and_is_frozen(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 3, n_messages=3)
    first, second, _unresolved = QueueItem.objects.filter(queue=queue).order_by("id")
    item_resolve(actor=lead, item=first, answers=ANSWERS, correction="Anneal at 58 °C.")
    item_resolve(actor=lead, item=second, answers={**ANSWERS, "correct": "wrong"})
    v1 = dataset_snapshot_create(actor=lead, name="v1", queues=[queue], description="first")
    item_resolve(actor=lead, item=first, answers={**ANSWERS, "correct": "correct"}, correction="")
    v2 = dataset_snapshot_create(actor=lead, name="v2", queues=[queue])

    old = DatasetItem.objects.filter(dataset=v1).order_by("id")
    assert [(i.queue_item_id, i.answers["correct"], i.correction) for i in old] == [
        (first.pk, "partly", "Anneal at 58 °C."),
        (second.pk, "wrong", ""),
    ]
    assert old[0].correction_message_key and not old[1].correction_message_key
    assert (old[0].queue_name, old[0].rubric_version_number, old[0].lead_username) == ("Answers", 1, "lena")
    new = DatasetItem.objects.filter(dataset=v2).order_by("id")
    assert [(i.answers["correct"], i.correction) for i in new] == [("correct", ""), ("wrong", "")]
    event = AuditEvent.objects.filter(action="dataset.created").order_by("id").first()
    assert event is not None and event.after is not None
    assert event.after["items"] == 2 and event.after["queues"] == ["Answers"]


def test_empty_duplicate_and_non_lead_snapshots_are_refused(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 1)
    with pytest.raises(InvalidInput) as empty:
        dataset_snapshot_create(actor=lead, name="v1", queues=[queue])
    assert [e["path"] for e in empty.value.errors] == ["/queues"]
    item_resolve(actor=lead, item=QueueItem.objects.get(queue=queue), answers=ANSWERS)
    dataset_snapshot_create(actor=lead, name="v1", queues=[queue])
    with pytest.raises(InvalidInput) as duplicate:
        dataset_snapshot_create(actor=lead, name="v1", queues=[queue])
    assert [e["path"] for e in duplicate.value.errors] == ["/name"]
    with pytest.raises(NotAllowed):
        dataset_snapshot_create(actor=reviewer, name="v2", queues=[queue])
    assert DatasetItem.objects.count() == 1
