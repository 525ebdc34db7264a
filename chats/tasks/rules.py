"""A lead's run of a queue rule over the stored conversations (`chats.models.QueueRuleRun`), carried out by a
worker through `chats.services.queue_rules.rule_run_execute` (the run's states are there). Transient database errors
retry the task."""

from __future__ import annotations

from celery import Task, shared_task

from chats.models import QueueRuleRun
from chats.transient import TRANSIENT_ERRORS


# A run not found yet may not be committed yet (the task was queued from inside a transaction): retried too.
@shared_task(bind=True, autoretry_for=(*TRANSIENT_ERRORS, QueueRuleRun.DoesNotExist), retry_backoff=True, max_retries=5)
def queue_rule_run(self: Task, run_id: int) -> None:  # type: ignore[type-arg]
    from chats.services.queue_rules import rule_run_execute

    rule_run_execute(run_id)
