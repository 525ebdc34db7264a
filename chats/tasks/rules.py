"""A lead's run of a queue rule over the stored conversations (`chats.models.QueueRuleRun`), carried out by a
worker through the service a run has always used (`chats.services.queue_rules.rule_run`).

Idempotent: a run done (or failed) is left as it is. The conversations are added and the run marked done in one
transaction, so a run re-delivered after its worker died either finds it done or starts over; and a queue never
holds a conversation twice (`queue_item_unique_conversation`; the service adds only what the queue lacks), so a
second run of a rule adds nothing the first added. Transient database errors retry the task.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from chats.errors import DomainError
from chats.models import JobState, QueueRuleRun
from chats.services.queue_rules import rule_run

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS = (OperationalError, InterfaceError)


# A run not found yet may not be committed yet (the task was queued from inside a transaction): retried too.
@shared_task(bind=True, autoretry_for=(*TRANSIENT_ERRORS, QueueRuleRun.DoesNotExist), retry_backoff=True, max_retries=5)
def queue_rule_run(self: Task, run_id: int) -> None:  # type: ignore[type-arg]
    queue_rule_run_execute(run_id)


def queue_rule_run_execute(run_id: int) -> None:
    """Carry out the run `run_id` (see the module's docstring); a rule the service refuses marks it failed."""
    run = QueueRuleRun.objects.select_related("rule__queue", "requested_by").get(pk=run_id)
    if run.state in (JobState.DONE, JobState.FAILED):
        return
    runs = QueueRuleRun.objects.filter(pk=run.pk)
    runs.update(state=JobState.RUNNING, started_at=timezone.now())
    try:
        with transaction.atomic():
            added = rule_run(actor=run.requested_by, rule=run.rule, run=run)
            runs.update(state=JobState.DONE, added=added, finished_at=timezone.now())
    except TRANSIENT_ERRORS:
        raise
    except DomainError as error:
        runs.update(state=JobState.FAILED, error="; ".join(error.messages), finished_at=timezone.now())
    except Exception as error:
        logger.exception("queue rule run %s failed", run.pk)
        runs.update(state=JobState.FAILED, error=f"{type(error).__name__}: {error}", finished_at=timezone.now())
