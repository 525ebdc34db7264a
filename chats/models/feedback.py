"""Feedback on conversations and messages: the managed label taxonomy, reviewers' and imported feedback, and the
labels a feedback carries (kept per conversation, like every table under one)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from chats.models.checks import choices_check
from chats.models.conversations import Conversation, Message


class Label(models.Model):
    """The managed feedback taxonomy."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class FeedbackOrigin(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    MASTERBRAIN = "masterbrain", "Imported: Masterbrain human_feedback"
    CHATGPT = "chatgpt", "Imported: ChatGPT message feedback"
    OPENWEBUI = "openwebui", "Imported: Open WebUI rating"


class Score(models.IntegerChoices):
    DOWN = -1, "Thumbs down"
    NEUTRAL = 0, "Neutral"
    UP = 1, "Thumbs up"


class Feedback(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="feedback")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, null=True, blank=True, related_name="feedback")
    origin = models.CharField(max_length=20, choices=FeedbackOrigin.choices, default=FeedbackOrigin.REVIEWER)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="feedback"
    )
    score = models.SmallIntegerField(choices=Score.choices, null=True, blank=True)
    labels = models.ManyToManyField(Label, through="FeedbackLabel", blank=True, related_name="feedback")
    comment = models.TextField(blank=True)
    correction = models.TextField(blank=True)
    raw = models.JSONField(null=True, blank=True)  # imported feedback exactly as received
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            choices_check("feedback_origin_valid", "origin", FeedbackOrigin),
            models.CheckConstraint(
                condition=Q(score__in=[-1, 0, 1]) | Q(score__isnull=True), name="feedback_score_valid"
            ),
            models.CheckConstraint(
                condition=(
                    Q(origin="reviewer", author__isnull=False) | (~Q(origin="reviewer") & Q(author__isnull=True))
                ),
                name="feedback_reviewer_has_author",
            ),
            # One feedback per reviewer per target: a reviewer edits theirs rather than piling up copies.
            models.UniqueConstraint(
                fields=["conversation", "author"],
                condition=Q(message__isnull=True, author__isnull=False),
                name="feedback_unique_reviewer_conversation",
            ),
            models.UniqueConstraint(
                fields=["conversation", "message", "author"],
                condition=Q(message__isnull=False, author__isnull=False),
                name="feedback_unique_reviewer_message",
            ),
            # Imported feedback: one per origin and target, so that re-importing is idempotent.
            models.UniqueConstraint(
                fields=["conversation", "message", "origin"],
                condition=Q(author__isnull=True, message__isnull=False),
                name="feedback_unique_imported_message",
            ),
            models.UniqueConstraint(
                fields=["conversation", "origin"],
                condition=Q(author__isnull=True, message__isnull=True),
                name="feedback_unique_imported_conversation",
            ),
        ]
        indexes = [
            # ?score=-1: conversations with a given score.
            models.Index(fields=["score", "conversation"], name="feedback_score_idx"),
            # ?feedback_origin=chatgpt: conversations with feedback from a given origin.
            models.Index(fields=["origin", "conversation"], name="feedback_origin_idx"),
        ]

    def __str__(self) -> str:
        return f"feedback {self.uuid}"

    @property
    def is_imported(self) -> bool:
        return self.origin != FeedbackOrigin.REVIEWER

    def snapshot(self, labels: list[str] | None = None) -> dict[str, Any]:
        """The audited values of this feedback."""
        return {
            "score": self.score,
            "comment": self.comment,
            "correction": self.correction,
            "labels": sorted(labels) if labels is not None else sorted(label.name for label in self.labels.all()),
            "message": self.message.key if self.message_id and self.message else None,
        }


class FeedbackLabel(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    feedback = models.ForeignKey(Feedback, on_delete=models.CASCADE)
    label = models.ForeignKey(Label, on_delete=models.PROTECT)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "feedback", "label"],
                name="feedbacklabel_unique_conversation_feedback_label",
            ),
        ]
        indexes = [
            # ?label=hallucination: conversations with feedback carrying a label.
            models.Index(fields=["label", "conversation"], name="feedbacklabel_label_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.feedback_id}:{self.label_id}"
