"""Queue rules: a saved set of the conversation list's filters and a sampling rate, applied to the conversations
ingestion creates or changes (`rules_apply`, called by both writers) and, when a lead runs one, to what is stored
(`rule_run`). The filters are the list's own FilterSet (`chats.filters.conversations.ConversationFilter`), the sample is
`chats.review.sampling.rule_takes`, and conversations go into the queue through
`chats.services.review.queue_add_conversation_ids`: one place each. Every write is audited."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import DomainError, InvalidInput
from chats.filters.conversations import conversation_filter_checked
from chats.json_types import JSONMapping, JSONObject
from chats.models import Conversation, JobState, Queue, QueueRule, QueueRuleRun
from chats.review.sampling import rule_takes
from chats.roles import lead_required, person_roles
from chats.services.audit import Actor, audit_record, audit_record_changes, audited_write, jsonable
from chats.services.dispatch import QUEUE_RULE_RUN, task_send
from chats.services.review import ADD_BATCH, queue_add_conversation_ids
from chats.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)


def _ensure_lead(actor: User) -> None:
    lead_required(person_roles(actor), "Only leads manage a queue's rules.")


def _checked_name(name: object, queue: Queue, rule: QueueRule | None = None) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidInput([{"path": "/name", "message": "must be a non-empty string of at most 200 characters"}])
    taken = QueueRule.objects.filter(queue=queue, name=name.strip())
    if rule is not None:
        taken = taken.exclude(pk=rule.pk)
    if taken.exists():
        raise InvalidInput([{"path": "/name", "message": "a rule of this queue already has this name"}])
    return name.strip()


def _checked_filters(filters: object) -> JSONObject:
    _, errors = conversation_filter_checked(filters)
    if errors:
        raise InvalidInput(errors)
    assert isinstance(filters, dict)
    return filters


def _checked_rate(rate: object) -> Decimal:
    try:
        value = Decimal(str(rate)) if not isinstance(rate, bool) else Decimal("NaN")
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or not 0 < value <= 1 or value != value.quantize(Decimal("0.0001")):
        raise InvalidInput([{"path": "/sample_rate", "message": "must be a number above 0 and at most 1 (4 decimals)"}])
    return value.quantize(Decimal("0.0001"))


def _checked_enabled(enabled: object) -> bool:
    if not isinstance(enabled, bool):
        raise InvalidInput([{"path": "/enabled", "message": "must be true or false"}])
    return enabled


def _rule_state(rule: QueueRule) -> JSONObject:
    return {
        "queue": rule.queue_id,
        "name": rule.name,
        "filters": rule.filters,
        "sample_rate": jsonable(rule.sample_rate),
        "enabled": rule.enabled,
    }


@audited_write
def rule_create(
    *,
    actor: User,
    queue: Queue,
    name: str,
    filters: JSONMapping,
    sample_rate: Decimal | float | str = Decimal(1),
    enabled: bool = True,
) -> QueueRule:
    """A new rule of `queue` (leads only): its filters are checked by the list's FilterSet."""
    _ensure_lead(actor)
    rule = QueueRule.objects.create(
        queue=queue,
        name=_checked_name(name, queue),
        filters=_checked_filters(filters),
        sample_rate=_checked_rate(sample_rate),
        enabled=_checked_enabled(enabled),
        created_by=actor,
    )
    audit_record(
        actor=actor,
        action=AuditAction.QUEUE_RULE_CREATED,
        target_type="queue_rule",
        target_id=rule.pk,
        after=_rule_state(rule),
    )
    return rule


@audited_write
def rule_update(
    *,
    actor: User,
    rule: QueueRule,
    name: str | None = None,
    filters: JSONMapping | None = None,
    sample_rate: Decimal | float | str | None = None,
    enabled: bool | None = None,
) -> bool:
    """Change what is given (leads only). Whether anything changed."""
    _ensure_lead(actor)
    rule = QueueRule.objects.select_for_update().get(pk=rule.pk)
    before = _rule_state(rule)
    if name is not None:
        rule.name = _checked_name(name, rule.queue, rule)
    if filters is not None:
        rule.filters = _checked_filters(filters)
    if sample_rate is not None:
        rule.sample_rate = _checked_rate(sample_rate)
    if enabled is not None:
        rule.enabled = _checked_enabled(enabled)
    after = _rule_state(rule)
    if after == before:
        return False
    rule.updated_at = timezone.now()
    rule.save(update_fields=["name", "filters", "sample_rate", "enabled", "updated_at"])
    audit_record_changes(
        actor=actor,
        action=AuditAction.QUEUE_RULE_UPDATED,
        target_type="queue_rule",
        target_id=rule.pk,
        before=before,
        after=after,
    )
    return True


@audited_write
def rule_delete(*, actor: User, rule: QueueRule) -> None:
    """Delete a rule (leads only); the conversations it added stay in the queue."""
    _ensure_lead(actor)
    rule = QueueRule.objects.select_for_update().get(pk=rule.pk)
    before = _rule_state(rule)
    pk = rule.pk
    rule.delete()
    audit_record(
        actor=actor, action=AuditAction.QUEUE_RULE_DELETED, target_type="queue_rule", target_id=pk, before=before
    )


def _taken(rule: QueueRule, matching: QuerySet[Conversation]) -> Iterator[int]:
    """The primary keys of the conversations of `matching` that the rule's sample takes."""
    rows = matching.order_by().values_list("pk", "uuid").iterator(chunk_size=ADD_BATCH)
    return (pk for pk, uuid in rows if rule_takes(rule.pk, uuid, rule.sample_rate))


def _matching(rule: QueueRule) -> tuple[QuerySet[Conversation] | None, list[dict[str, str]]]:
    """The stored conversations the rule's filters match, or None and why when its filters no longer validate
    (a source or a label since removed)."""
    filterset, errors = conversation_filter_checked(rule.filters)
    return (filterset.qs if filterset is not None else None), errors


def rule_run_request(*, actor: User, rule: QueueRule) -> QueueRuleRun:
    """Ask for a run of the rule over everything stored (leads only), carried out by a worker
    (`chats.tasks.rules`, through `rule_run_execute`): the run's record, done when this returns if there is no broker.
    A rule whose filters no longer validate is refused now rather than by the worker."""
    _ensure_lead(actor)
    _, errors = _matching(rule)
    if errors:
        raise InvalidInput(errors)
    run = QueueRuleRun.objects.create(rule=rule, requested_by=actor)
    task_send(QUEUE_RULE_RUN, run.pk)
    run.refresh_from_db()
    return run


def rule_run_execute(run_id: int) -> None:
    """Carry out the run `run_id` (the task `chats.tasks.rules.queue_rule_run`) through `rule_run`; a rule the
    service refuses marks it failed with the reason, and a transient database error is raised for the task to retry.

    Idempotent: a run done (or failed) is left as it is. The conversations are added and the run marked done in one
    transaction, so a run delivered again after its worker died either finds it done or starts over; and a queue
    never holds a conversation twice (`queue_item_unique_conversation`; `rule_run` adds only what the queue lacks),
    so a second run of a rule adds nothing the first added."""
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


@audited_write
def rule_run(*, actor: User, rule: QueueRule, run: QueueRuleRun | None = None) -> int:
    """Apply the rule once to everything stored (leads only): the matching conversations its sample takes and the
    queue lacks are added. How many were added (running it again adds none). `run`: the record of the run this
    carries out, named in its event."""
    _ensure_lead(actor)
    matching, errors = _matching(rule)
    if matching is None:
        raise InvalidInput(errors)
    added = queue_add_conversation_ids(
        actor=actor, queue=rule.queue, conversation_ids=_taken(rule, matching), rule=rule
    )
    after: JSONObject = {"added": added}
    if run is not None:
        after["run"] = run.pk
    audit_record(
        actor=actor, action=AuditAction.QUEUE_RULE_RAN, target_type="queue_rule", target_id=rule.pk, after=after
    )
    return added


def rules_apply(*, actor: Actor, conversation_ids: Sequence[int]) -> int:
    """Apply every enabled rule to these conversations, just created or changed by an ingestion (a document, or a
    bulk batch at once): one read of the rules, then a fixed number of queries per rule however many conversations
    there are. A rule never makes ingestion fail: one whose filters no longer validate, or that fails, is skipped
    and logged. How many items were added."""
    if not conversation_ids:
        return 0
    added = 0
    for rule in QueueRule.objects.filter(enabled=True).select_related("queue").order_by("id"):
        try:
            with transaction.atomic():
                matching, errors = _matching(rule)
                if matching is None:
                    logger.warning(
                        "queue rule %s (%r) skipped, its filters no longer validate: %s", rule.pk, rule.name, errors
                    )
                    continue
                taken = list(_taken(rule, matching.filter(pk__in=list(conversation_ids))))
                added += queue_add_conversation_ids(actor=actor, queue=rule.queue, conversation_ids=taken, rule=rule)
        except Exception:
            logger.exception("queue rule %s (%r) failed on ingested conversations; skipped", rule.pk, rule.name)
    return added
