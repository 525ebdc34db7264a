"""Queue rules: a saved set of the list's filters and a sampling rate, applied by both ingestion writers and by a
lead's run over what is stored; sampled by one stable hash (tests/review/test_sampling.py), so that nothing is ever
added twice."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from chats.errors import InvalidInput, NotAllowed
from chats.models import AuditEvent, Conversation, Queue, QueueItem, QueueRule, Source
from chats.review.sampling import rule_takes
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.ingestion import conversation_ingest
from chats.services.queue_rules import rule_create, rule_delete, rule_run, rule_update
from tests.factories import make_messages
from tests.factories.review import make_lead, make_queue

pytestmark = pytest.mark.django_db


def document(number: int, *, with_tools: bool = True, prefix: str = "chat") -> dict[str, Any]:
    return {
        "chat_id": f"{prefix}-{number}",
        "model": "qwen3.5-flash",
        "main_messages": make_messages(6 if with_tools else 2, with_tools=with_tools, topic=f"topic {number}"),
    }


def items_of(queue: Queue) -> set[str]:
    return set(QueueItem.objects.filter(queue=queue).values_list("conversation__external_id", flat=True))


def expected(rule: QueueRule, conversations: Any) -> set[str]:
    return {c.external_id for c in conversations if rule_takes(rule.pk, c.uuid, rule.sample_rate)}


@pytest.fixture
def lead() -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User) -> Queue:
    return make_queue(lead, [])


# --- running a rule over what is stored


def test_a_20_percent_rule_over_500_conversations_adds_its_sample_and_running_it_again_adds_nothing(
    source: Source, lead: User, queue: Queue
) -> None:
    conversations_ingest_bulk(source=source, documents=[document(n) for n in range(500)])
    rule = rule_create(actor=lead, queue=queue, name="A fifth", filters={}, sample_rate="0.2")

    added = rule_run(actor=lead, rule=rule)

    stored = Conversation.objects.all()
    assert items_of(queue) == expected(rule, stored)
    assert added == len(expected(rule, stored))
    assert 0.15 * 500 <= added <= 0.25 * 500
    assert rule_run(actor=lead, rule=rule) == 0
    assert QueueItem.objects.filter(queue=queue).count() == added
    runs = AuditEvent.objects.filter(action="queue_rule.ran").order_by("id").values_list("after", flat=True)
    assert list(runs) == [{"added": added}, {"added": 0}]
    assert AuditEvent.objects.get(action="queue.items_added").after == {"added": added, "rule": rule.pk}


def test_a_rule_with_a_filter_adds_only_the_matching_conversations(source: Source, lead: User, queue: Queue) -> None:
    conversations_ingest_bulk(source=source, documents=[document(n, with_tools=n % 2 == 0) for n in range(40)])
    rule = rule_create(
        actor=lead, queue=queue, name="Searches", filters={"tool_name": "airalogy_search"}, sample_rate=1
    )
    assert rule_run(actor=lead, rule=rule) == 20
    assert items_of(queue) == {f"chat-{n}" for n in range(0, 40, 2)}


def test_a_rule_on_a_source_that_has_sent_nothing_yet_applies_when_it_sends(lead: User, queue: Queue) -> None:
    first, second = Source.objects.create(name="first"), Source.objects.create(name="second")
    rule_create(actor=lead, queue=queue, name="Second's", filters={"source": "second"})
    conversation_ingest(source=first, document=document(1))
    conversation_ingest(source=second, document=document(2))
    assert items_of(queue) == {"chat-2"}


# --- at ingestion


def test_ingestion_adds_the_sampled_matching_conversations_it_creates_or_changes(
    source: Source, lead: User, queue: Queue
) -> None:
    rule = rule_create(actor=lead, queue=queue, name="Half", filters={"has_tool_calls": "true"}, sample_rate="0.5")
    for n in range(30):
        conversation_ingest(source=source, document=document(n, with_tools=n % 3 != 0))
    with_tools = Conversation.objects.filter(tool_call_count__gt=0)
    assert with_tools.count() == 20
    assert items_of(queue) == expected(rule, with_tools) != set()
    # Sent again: unchanged, nothing more; grown: the same conversation, already in the queue.
    conversation_ingest(source=source, document=document(1))
    grown = document(2)
    grown["main_messages"] += [{"role": "user", "content": "And then?"}]
    assert conversation_ingest(source=source, document=grown).outcome == "updated"
    assert QueueItem.objects.filter(queue=queue).count() == len(expected(rule, with_tools))


def test_only_conversations_this_ingestion_created_or_changed_are_added(
    source: Source, lead: User, queue: Queue
) -> None:
    conversation_ingest(source=source, document=document(1))
    rule_create(actor=lead, queue=queue, name="All", filters={})
    assert conversation_ingest(source=source, document=document(1)).outcome == "unchanged"
    conversations_ingest_bulk(source=source, documents=[document(1), document(2)])
    assert items_of(queue) == {"chat-2"}


def test_a_disabled_rule_adds_nothing(source: Source, lead: User, queue: Queue) -> None:
    rule = rule_create(actor=lead, queue=queue, name="All", filters={}, enabled=False)
    conversation_ingest(source=source, document=document(1))
    conversations_ingest_bulk(source=source, documents=[document(2), document(3)])
    assert items_of(queue) == set()
    assert rule_update(actor=lead, rule=rule, enabled=True)
    conversation_ingest(source=source, document=document(4))
    assert items_of(queue) == {"chat-4"}


def test_the_single_path_and_the_bulk_path_add_the_same_items_for_the_same_documents(lead: User) -> None:
    one_by_one, batched = Source.objects.create(name="one-by-one"), Source.objects.create(name="batched")
    queues = {name: make_queue(lead, [], name=name) for name in ("everything", "sampled")}
    rules = {
        "everything": rule_create(
            actor=lead, queue=queues["everything"], name="Tools", filters={"has_tool_calls": "true"}
        ),
        "sampled": rule_create(
            actor=lead, queue=queues["sampled"], name="Some", filters={"has_tool_calls": "true"}, sample_rate="0.5"
        ),
    }
    documents = [document(n, with_tools=n % 4 != 0) for n in range(40)]
    for doc in documents:
        conversation_ingest(source=one_by_one, document=doc)
    conversations_ingest_bulk(source=batched, documents=documents)

    def added(source: Source, queue: Queue) -> set[str]:
        return set(
            QueueItem.objects.filter(queue=queue, conversation__source=source).values_list(
                "conversation__external_id", flat=True
            )
        )

    matching = {f"chat-{n}" for n in range(40) if n % 4 != 0}
    assert added(one_by_one, queues["everything"]) == added(batched, queues["everything"]) == matching
    for source in (one_by_one, batched):
        stored = Conversation.objects.filter(source=source, tool_call_count__gt=0)
        assert added(source, queues["sampled"]) == expected(rules["sampled"], stored)


def _bulk_queries(source: Source, documents: list[dict[str, Any]]) -> int:
    with CaptureQueriesContext(connection) as queries:
        results = conversations_ingest_bulk(source=source, documents=documents)
    assert {result.outcome for result in results} == {"created"}
    return len(queries)


@pytest.mark.postgres  # elsewhere the bulk endpoint takes the ordinary path, document by document
def test_a_bulk_batch_applies_the_rules_in_the_same_queries_however_many_documents_it_has(
    source: Source, lead: User, queue: Queue, django_assert_num_queries: Any
) -> None:
    other = make_queue(lead, [], name="Others")
    rule_create(actor=lead, queue=queue, name="All", filters={})
    rule_create(
        actor=lead, queue=other, name="Searches", filters={"tool_name": "airalogy_search", "source": "masterbrain"}
    )
    rule_create(actor=lead, queue=other, name="Never", filters={"model": "nobody's model"})
    few = _bulk_queries(source, [document(n, prefix="few") for n in range(3)])
    with django_assert_num_queries(few):
        conversations_ingest_bulk(source=source, documents=[document(n, prefix="many") for n in range(60)])
    assert QueueItem.objects.filter(queue=queue).count() == 63
    assert QueueItem.objects.filter(queue=other).count() == 63
    # Against the same batches without rules: a fixed number of queries per rule, not per document.
    for rule in QueueRule.objects.all():
        rule_delete(actor=lead, rule=rule)
    without = _bulk_queries(source, [document(n, prefix="bare") for n in range(60)])
    # The rules' read, then per rule its savepoint, its filters' checks and match, the items present, the insert,
    # the event: at most 10.
    assert without < few <= without + 1 + 3 * 10


@pytest.mark.postgres  # elsewhere the bulk endpoint takes the ordinary path, document by document
def test_a_rule_whose_filters_no_longer_validate_is_skipped_and_logged(
    source: Source, lead: User, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    broken = rule_create(actor=lead, queue=queue, name="Broken", filters={"format": "openai"})
    QueueRule.objects.filter(pk=broken.pk).update(filters={"format": "no such format"})
    working = make_queue(lead, [], name="Working")
    rule_create(actor=lead, queue=working, name="All", filters={})
    with caplog.at_level(logging.WARNING, logger="chats.services.queue_rules"):
        assert conversation_ingest(source=source, document=document(1)).outcome == "created"
        results = conversations_ingest_bulk(source=source, documents=[document(2), document(3)])
    assert [result.outcome for result in results] == ["created", "created"]
    assert items_of(queue) == set()
    assert items_of(working) == {"chat-1", "chat-2", "chat-3"}
    skipped = [r for r in caplog.records if r.name == "chats.services.queue_rules"]
    assert len(skipped) == 2 and "/filters/format" in skipped[0].getMessage()
    with pytest.raises(InvalidInput) as error:
        rule_run(actor=lead, rule=QueueRule.objects.get(pk=broken.pk))
    assert [e["path"] for e in error.value.errors] == ["/filters/format"]


# --- creating, changing and deleting rules


@pytest.mark.parametrize(
    ("filters", "path"),
    [
        ({"format": "no such format"}, "/filters/format"),
        ({"status": "finished"}, "/filters/status"),
        ({"date_from": "yesterday"}, "/filters/date_from"),
        ({"source": "nobody"}, "/filters/source"),
        ({"tool_nam": "airalogy_search"}, "/filters/tool_nam"),
        ({"model": 3}, "/filters/model"),
        (["model"], "/filters"),
    ],
)
def test_invalid_filters_are_refused_with_the_parameter_named(
    lead: User, queue: Queue, filters: Any, path: str
) -> None:
    with pytest.raises(InvalidInput) as error:
        rule_create(actor=lead, queue=queue, name="Bad", filters=filters)
    assert [e["path"] for e in error.value.errors] == [path]
    assert not QueueRule.objects.exists()


@pytest.mark.parametrize("rate", [0, "0", -0.1, 1.5, "0.00001", "half", True, float("nan")])
def test_a_sample_rate_must_be_above_0_and_at_most_1(lead: User, queue: Queue, rate: Any) -> None:
    with pytest.raises(InvalidInput) as error:
        rule_create(actor=lead, queue=queue, name="Bad", filters={}, sample_rate=rate)
    assert [e["path"] for e in error.value.errors] == ["/sample_rate"]


def test_the_database_refuses_a_sample_rate_out_of_range(queue: Queue) -> None:
    for rate in (Decimal(0), Decimal("1.5")):
        with pytest.raises(IntegrityError), transaction.atomic():
            QueueRule.objects.create(queue=queue, name=f"rate {rate}", sample_rate=rate)


def test_only_leads_manage_rules(lead: User, queue: Queue, reviewer: User, auditor: User) -> None:
    rule = rule_create(actor=lead, queue=queue, name="All", filters={})
    for person in (reviewer, auditor):
        with pytest.raises(NotAllowed):
            rule_create(actor=person, queue=queue, name="Mine", filters={})
        with pytest.raises(NotAllowed):
            rule_update(actor=person, rule=rule, sample_rate="0.5")
        with pytest.raises(NotAllowed):
            rule_run(actor=person, rule=rule)
        with pytest.raises(NotAllowed):
            rule_delete(actor=person, rule=rule)
    assert QueueRule.objects.get().sample_rate == 1


def test_every_change_to_a_rule_is_audited(lead: User, queue: Queue) -> None:
    rule = rule_create(actor=lead, queue=queue, name="All", filters={"format": "openai"}, sample_rate="0.25")
    assert rule_update(actor=lead, rule=rule, sample_rate="0.5", filters={"format": "openai"})
    assert not rule_update(actor=lead, rule=rule, sample_rate="0.5000")
    rule_delete(actor=lead, rule=rule)
    events = AuditEvent.objects.filter(target_type="queue_rule").order_by("id")
    state = {"queue": queue.pk, "name": "All", "filters": {"format": "openai"}, "enabled": True}
    assert [(e.action, e.actor_username, e.before, e.after) for e in events] == [
        ("queue_rule.created", "lena", None, state | {"sample_rate": "0.2500"}),
        ("queue_rule.updated", "lena", {"sample_rate": "0.2500"}, {"sample_rate": "0.5000"}),
        ("queue_rule.deleted", "lena", state | {"sample_rate": "0.5000"}, None),
    ]
    assert not QueueRule.objects.exists()


def test_two_rules_of_a_queue_cannot_share_a_name(lead: User, queue: Queue) -> None:
    rule_create(actor=lead, queue=queue, name="All", filters={})
    with pytest.raises(InvalidInput) as error:
        rule_create(actor=lead, queue=queue, name="All", filters={})
    assert [e["path"] for e in error.value.errors] == ["/name"]
