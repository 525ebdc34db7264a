"""Reviewers' feedback on a conversation or a message: a score, labels, a comment, a correction. Each change is
audited, and the conversation's feedback counters follow it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput, NotAllowed
from chats.models import Conversation, Feedback, FeedbackLabel, FeedbackOrigin, Label, Message
from chats.services.audit import audit_record, audited_write
from chats.services.trend_rollups import trends_rollup_soon
from chats.storable import unstorable


def _feedback_validate(
    *, message: Message | None, score: int | None, correction: str, labels: Iterable[Label], comment: str
) -> None:
    # Text the reviewer typed crosses the one storable-value boundary (NUL, lone surrogates, size), named by field.
    errors = [
        found.as_error()
        for field, text in (("comment", comment), ("correction", correction))
        if (found := unstorable(text, f"/{field}")) is not None
    ]
    if errors:
        raise InvalidInput(errors)
    if score is not None and score not in (-1, 0, 1):
        errors.append({"path": "/score", "message": "must be -1, 0 or 1"})
    if correction and (message is None or message.role != "assistant"):
        errors.append({"path": "/correction", "message": "only an assistant message can be corrected"})
    if score is None and not comment.strip() and not correction.strip() and not list(labels):
        errors.append({"path": "", "message": "give a score, a label, a comment or a correction"})
    if errors:
        raise InvalidInput(errors)


@audited_write
def feedback_submit(
    *,
    author: User,
    conversation: Conversation,
    message: Message | None = None,
    score: int | None = None,
    labels: Sequence[Label] = (),
    comment: str = "",
    correction: str = "",
) -> tuple[Feedback, bool]:
    """Create the reviewer's feedback on a conversation or a message, or change it if they already gave some."""
    _feedback_validate(message=message, score=score, correction=correction, labels=labels, comment=comment)
    mine = Feedback.objects.select_for_update().filter(conversation=conversation, message=message, author=author)
    existing = mine.first()
    if existing is None:
        now = timezone.now()
        try:
            with transaction.atomic():
                feedback = Feedback.objects.create(
                    conversation=conversation,
                    message=message,
                    origin=FeedbackOrigin.REVIEWER,
                    author=author,
                    score=score,
                    comment=comment,
                    correction=correction,
                    created_at=now,
                    updated_at=now,
                )
        except IntegrityError:
            # A second submission of the same reviewer raced this one: change theirs instead.
            existing = mine.get()
    if existing is not None:
        changed = feedback_update(
            actor=author, feedback=existing, score=score, labels=labels, comment=comment, correction=correction
        )
        return changed, False
    _feedback_set_labels(feedback, labels)
    feedback_summary_refresh(conversation)
    audit_record(
        actor=author,
        action=AuditAction.FEEDBACK_CREATED,
        target_type="feedback",
        target_id=feedback.uuid,
        conversation_uuid=conversation.uuid,
        before=None,
        after=feedback.snapshot([label.name for label in labels]),
    )
    return feedback, True


def _feedback_set_labels(feedback: Feedback, labels: Sequence[Label]) -> None:
    FeedbackLabel.objects.filter(feedback=feedback).exclude(label__in=labels).delete()
    FeedbackLabel.objects.bulk_create(
        [FeedbackLabel(conversation_id=feedback.conversation_id, feedback=feedback, label=label) for label in labels],
        ignore_conflicts=True,
    )


def feedback_ensure_owner(actor: User, feedback: Feedback) -> None:
    """Reviewers change only their own feedback; superusers (the admins) manage everything. Only a person owns
    feedback: a caller without a primary key (a source's key) owns none, not even imported feedback (no author)."""
    if actor.is_superuser:
        return
    if actor.pk is None or feedback.author_id != actor.pk:
        raise NotAllowed("You can change only your own feedback.")


@audited_write
def feedback_update(
    *,
    actor: User,
    feedback: Feedback,
    score: int | None,
    labels: Sequence[Label],
    comment: str,
    correction: str,
) -> Feedback:
    feedback_ensure_owner(actor, feedback)
    _feedback_validate(message=feedback.message, score=score, correction=correction, labels=labels, comment=comment)
    before = feedback.snapshot()
    feedback.score, feedback.comment, feedback.correction = score, comment, correction
    feedback.updated_at = timezone.now()
    feedback.save(update_fields=["score", "comment", "correction", "updated_at"])
    _feedback_set_labels(feedback, labels)
    after = feedback.snapshot([label.name for label in labels])
    feedback_summary_refresh(feedback.conversation)
    if before != after:
        audit_record(
            actor=actor,
            action=AuditAction.FEEDBACK_UPDATED,
            target_type="feedback",
            target_id=feedback.uuid,
            conversation_uuid=feedback.conversation.uuid,
            before=before,
            after=after,
        )
    return feedback


@audited_write
def feedback_delete(*, actor: User, feedback: Feedback) -> None:
    feedback_ensure_owner(actor, feedback)
    before = feedback.snapshot()
    conversation = feedback.conversation
    uuid = feedback.uuid
    feedback.delete()
    feedback_summary_refresh(conversation)
    audit_record(
        actor=actor,
        action=AuditAction.FEEDBACK_DELETED,
        target_type="feedback",
        target_id=uuid,
        conversation_uuid=conversation.uuid,
        before=before,
        after=None,
    )


def feedback_summary_refresh(conversation: Conversation, *, save: bool = True) -> None:
    summary = Feedback.objects.filter(conversation=conversation).aggregate(
        total=Count("id"), up=Count("id", filter=Q(score=1)), down=Count("id", filter=Q(score=-1))
    )
    conversation.feedback_count = summary["total"]
    conversation.score_up = summary["up"]
    conversation.score_down = summary["down"]
    if save:
        conversation.save(update_fields=["feedback_count", "score_up", "score_down"])
        trends_rollup_soon([conversation.pk])  # the thumbs-down share and mean score of its day
