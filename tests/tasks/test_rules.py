"""The queue rule run task: idempotent (delivered twice, or run again, the queue holds the same items), and a run
the service refuses is failed with the reason."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError

from chats.models import AuditEvent, JobState, Queue, QueueItem, QueueRuleRun, Source
from chats.services import queue_rules
from chats.services.queue_rules import rule_create, rule_run, rule_run_execute
from chats.tasks import rules as rule_tasks
from chats.tasks.rules import queue_rule_run
from tests.factories import make_conversation
from tests.factories.review import make_lead, make_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User) -> Queue:
    return make_queue(lead, [reviewer])


def items(queue: Queue) -> list[int]:
    return sorted(QueueItem.objects.filter(queue=queue).values_list("conversation_id", flat=True))


def test_running_the_task_twice_leaves_the_same_items(lead: User, queue: Queue, source: Source) -> None:
    conversations = [make_conversation(source, n_messages=2) for _ in range(4)]
    rule = rule_create(actor=lead, queue=queue, name="All", filters={})
    run = QueueRuleRun.objects.create(rule=rule, requested_by=lead)

    rule_run_execute(run.pk)
    first = items(queue)
    queue_rule_run(run.pk)  # the same run delivered again: left as it is
    run.refresh_from_db()
    assert first == sorted(c.pk for c in conversations) == items(queue)
    assert (run.state, run.added) == (JobState.DONE, 4)
    assert run.started_at is not None and run.finished_at is not None
    assert AuditEvent.objects.filter(action="queue_rule.ran").count() == 1

    # A run left running by a worker that died starts over and adds nothing twice.
    QueueRuleRun.objects.filter(pk=run.pk).update(state=JobState.RUNNING)
    rule_run_execute(run.pk)
    run.refresh_from_db()
    assert items(queue) == first
    assert (run.state, run.added) == (JobState.DONE, 0)
    ran = AuditEvent.objects.filter(action="queue_rule.ran").order_by("id").last()
    assert ran is not None and ran.after == {"added": 0, "run": run.pk}


def test_a_run_asked_for_by_someone_no_longer_a_lead_fails_with_the_reason(
    lead: User, queue: Queue, source: Source
) -> None:
    make_conversation(source, n_messages=2)
    rule = rule_create(actor=lead, queue=queue, name="All", filters={})
    run = QueueRuleRun.objects.create(rule=rule, requested_by=lead)
    lead.groups.clear()

    rule_run_execute(run.pk)

    run.refresh_from_db()
    assert (run.state, run.added, run.error) == (JobState.FAILED, None, "Only leads manage a queue's rules.")
    assert items(queue) == []


def test_a_transient_database_error_retries_the_run(
    lead: User, queue: Queue, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_conversation(source, n_messages=2)
    rule = rule_create(actor=lead, queue=queue, name="All", filters={})
    run = QueueRuleRun.objects.create(rule=rule, requested_by=lead)
    failures = [OperationalError("could not serialize access")]

    def once_unreachable(**kwargs: Any) -> int:
        if failures:
            raise failures.pop()
        return rule_run(**kwargs)

    monkeypatch.setattr(queue_rules, "rule_run", once_unreachable)
    monkeypatch.setattr(rule_tasks.queue_rule_run, "retry_backoff", False)

    rule_tasks.queue_rule_run.apply(args=(run.pk,), throw=False)

    run.refresh_from_db()
    assert not failures
    assert (run.state, run.added, run.error) == (JobState.DONE, 1, "")
    assert len(items(queue)) == 1
