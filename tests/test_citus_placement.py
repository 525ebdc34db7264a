"""The schema stays distributable by conversation (chats.citus_placement, docs/SCALING.md): every row under a
conversation names it, unique keys include it, no foreign key crosses conversations; and the statements that
distribute it hold on a populated database and are the ones the documentation shows."""

from __future__ import annotations

# ruff: noqa: DJ008  (throwaway models, never shown)
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import IntegrityError, connection, models, transaction
from django.test.utils import isolate_apps

from chats.citus_placement import TABLES, Change, Placement, Table, citus_ddl, schema_problems
from chats.models import Conversation, Lease, Message, Resolution, Review, Source
from chats.services.datasets import dataset_snapshot_create
from chats.services.feedback import feedback_submit
from chats.services.review import item_lease_next, item_resolve, review_submit
from tests import factories
from tests.factories.review import ANSWERS, fill_queue, make_lead, make_queue

# engines: citus_ddl refuses engines other than PostgreSQL; CI runs this file again on SQLite.
pytestmark = pytest.mark.engines

SCALING = Path(__file__).resolve().parents[1] / "docs" / "SCALING.md"


def _installed() -> dict[str, Any]:
    return {m._meta.label: m for m in apps.get_models(include_auto_created=True) if m._meta.managed}


def test_the_schema_is_distributable_as_placed() -> None:
    assert schema_problems() == []


@pytest.mark.django_db  # some checks of the models read the database
def test_manage_py_check_refuses_a_schema_that_drifts(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core import checks

    monkeypatch.delitem(TABLES, "chats.Label")
    errors = [m for m in checks.run_checks(tags=[checks.Tags.models]) if m.id == "chats.E001"]
    assert [e.msg for e in errors] == ["chats.Label: not placed in chats.citus_placement.TABLES"]


@isolate_apps("chats")
def test_a_new_table_must_be_placed_and_a_placed_one_must_exist() -> None:
    class Note(models.Model):
        conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")

        class Meta:
            app_label = "chats"

    found = {**_installed(), "chats.Note": Note}
    tables = {**TABLES, "chats.Gone": Table(Placement.LOCAL)}
    assert schema_problems(found, tables) == [
        "chats.Note: not placed in chats.citus_placement.TABLES",
        "chats.Gone: placed, but no such model",
    ]
    assert schema_problems(found, {**TABLES, "chats.Note": Table(Placement.DISTRIBUTED)}) == []


@isolate_apps("chats")
def test_a_distributed_table_names_its_conversation_and_keeps_it_in_its_unique_keys() -> None:
    class Orphan(models.Model):
        message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
        tag = models.CharField(max_length=10, unique=True)

        class Meta:
            app_label = "chats"
            constraints = [models.UniqueConstraint(fields=["message", "tag"], name="orphan_unique_tag")]

    class Loose(models.Model):
        conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, null=True, related_name="+")

        class Meta:
            app_label = "chats"

    found = {**_installed(), "chats.Orphan": Orphan, "chats.Loose": Loose}
    placed = {**TABLES, "chats.Orphan": Table(Placement.DISTRIBUTED), "chats.Loose": Table(Placement.DISTRIBUTED)}
    assert schema_problems(found, placed) == [
        "chats.Loose: distributed, but has no NOT NULL foreign key `conversation`",
        "chats.Orphan: distributed, but has no NOT NULL foreign key `conversation`",
        "chats.Orphan: unique tag leaves out conversation_id",
        "chats.Orphan: unique orphan_unique_tag leaves out conversation_id",
    ]
    # A unique key that cannot include the conversation passes only with what replaces it written down.
    excused = {
        **placed,
        "chats.Orphan": Table(
            Placement.DISTRIBUTED, changes={"tag": Change("why"), "orphan_unique_tag": Change("why")}
        ),
    }
    assert "chats.Orphan: unique tag leaves out conversation_id" not in schema_problems(found, excused)


@isolate_apps("chats")
def test_no_foreign_key_leaves_its_placement_unless_it_is_dropped() -> None:
    class Tally(models.Model):  # a reference table pointing at a conversation's row
        message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")

        class Meta:
            app_label = "chats"

    class Log(models.Model):  # a local table pointing at users and sources: allowed
        user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
        source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+")

        class Meta:
            app_label = "chats"

    found = {**_installed(), "chats.Tally": Tally, "chats.Log": Log}
    placed = {**TABLES, "chats.Tally": Table(Placement.REFERENCE), "chats.Log": Table(Placement.LOCAL)}
    assert schema_problems(found, placed) == [
        "chats.Tally.message: a reference table points at the distributed chats.Message",
    ]
    dropped = {**placed, "chats.Tally": Table(Placement.REFERENCE, changes={"message": Change("dropped")})}
    assert schema_problems(found, dropped) == []
    # A change that no longer excuses anything is stale, and says so.
    stale = {**dropped, "chats.Log": Table(Placement.LOCAL, changes={"user": Change("dropped")})}
    assert schema_problems(found, stale) == ["chats.Log: changes names user, which needs no change"]


def _populate(source: Source, reviewer: User, other_reviewer: User) -> list[Conversation]:
    """Rows in every distributed table: messages with tool calls and artifacts, feedback with labels, queue items
    with a lease, reviews and a resolution, a dataset item."""
    conversations = [factories.make_conversation(source, n_messages=6) for _ in range(2)]
    conversations.append(factories.make_chatgpt_branches(source))
    label = factories.make_labels("hallucination")
    answer = factories.last_assistant(conversations[0])
    feedback_submit(author=reviewer, conversation=conversations[0], message=answer, labels=label, correction="Better.")
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 2)
    items = [item_lease_next(queue=queue, reviewer=person) for person in (reviewer, other_reviewer)]
    for person, item in zip((reviewer, other_reviewer), items, strict=True):
        assert item is not None
        review_submit(reviewer=person, item=item, answers=ANSWERS)
    held = item_lease_next(queue=queue, reviewer=reviewer)
    assert held is not None
    assert items[0] is not None
    item_resolve(actor=lead, item=items[0], answers=ANSWERS, correction="Gold.")
    dataset_snapshot_create(actor=lead, name="gold", queues=[queue])
    assert Lease.objects.exists() and Review.objects.count() == 2 and Resolution.objects.exists()
    return conversations


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_constraint_changes_hold_on_a_populated_database_and_then_refuse_a_row_that_crosses(
    source: Source, reviewer: User, other_reviewer: User
) -> None:
    first, second, _ = _populate(source, reviewer, other_reviewer)
    # The review rows name their item's conversation, as the services write them.
    for model in (Lease, Review, Resolution):
        assert not model.objects.exclude(conversation_id=models.F("item__conversation_id")).exists()

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the writes' deferred checks, before altering the tables
        for statement in citus_ddl().constraints:
            cursor.execute(statement)
        cursor.execute("SELECT count(*) FROM chats_conversation_key")
        assert cursor.fetchone() == (Conversation.objects.count(),)
        # A reply whose parent is another conversation's message no longer fits in the schema.
        stray = Message.objects.filter(conversation=second).order_by("position").last()
        assert stray is not None
        with pytest.raises(IntegrityError), transaction.atomic():
            Message.objects.filter(pk=stray.pk).update(parent=Message.objects.filter(conversation=first).first())
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        transaction.set_rollback(True)


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_constraint_changes_refuse_a_database_where_a_row_already_crosses(
    source: Source, reviewer: User, other_reviewer: User
) -> None:
    _populate(source, reviewer, other_reviewer)
    # A lease: a submitted review is never changed (migration 0025), not even to make it cross.
    lease = Lease.objects.select_related("item").first()
    assert lease is not None
    Lease.objects.filter(pk=lease.pk).update(
        conversation=Conversation.objects.exclude(pk=lease.item.conversation_id).first()
    )
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for statement in citus_ddl().constraints:
            cursor.execute(statement)


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_scaling_guide_shows_the_statements_this_schema_needs(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("citus_ddl")
    printed = capsys.readouterr().out
    assert printed == citus_ddl().text()
    assert printed in SCALING.read_text(), "docs/SCALING.md is out of date: paste `manage.py citus_ddl` into it"
