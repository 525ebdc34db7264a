"""The Trends page's rollups: per day (UTC, of a conversation's last activity) and source, what the charts count,
recomputed from the rows for the (day, source) keys an ingestion or a feedback write touched
(chats.services.trend_rollups), so that a range of two years reads a few thousand rows, not a million messages.

Every figure counts conversations, and a conversation falls in exactly one day: the days of a week add up to the
week, and a rollup row's counts are those the conversation list's filters select over that day.
"""

from __future__ import annotations

from django.db import models


class TrendDay(models.Model):
    """Conversations by day, source, model and workflow: how many, their messages, and their feedback."""

    day = models.DateField()
    source = models.ForeignKey("chats.Source", on_delete=models.CASCADE, related_name="+")
    model_name = models.CharField(max_length=200, blank=True)
    workflow = models.CharField(max_length=200, blank=True)
    conversations = models.IntegerField()
    messages = models.BigIntegerField()
    scored = models.IntegerField()  # conversations with scored feedback
    down = models.IntegerField()  # of those, the conversations with a thumbs down
    score_sum = models.BigIntegerField()  # over every scored feedback of the conversations
    score_count = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "source", "model_name", "workflow"], name="trendday_key_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.source_id} {self.model_name} {self.workflow}"


class TrendFigure(models.TextChoices):
    UNANSWERED = "unanswered", "Unanswered tool calls"
    INVALID_ARGUMENTS = "invalid-arguments", "Tool calls with invalid arguments"
    ORPHANS = "orphans", "Orphan tool results"
    VIOLATIONS = "violations", "Policy violations by artifact kind"


class TrendTally(models.Model):
    """Conversations by day and source with a flag of one figure, per name (a tool, an artifact kind; none for
    orphan results): a conversation is counted once per name, however many of its calls have the flag."""

    day = models.DateField()
    source = models.ForeignKey("chats.Source", on_delete=models.CASCADE, related_name="+")
    figure = models.CharField(max_length=32, choices=TrendFigure.choices)
    name = models.CharField(max_length=255, blank=True)
    conversations = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "source", "figure", "name"], name="trendtally_key_uniq"),
        ]
        indexes = [models.Index(fields=["figure", "day"], name="trendtally_figure_day_idx")]

    def __str__(self) -> str:
        return f"{self.day} {self.source_id} {self.figure} {self.name}"


class TrendMember(models.Model):
    """The (day, source) key a conversation was last rolled up under: when its last activity moves to another day,
    the day it leaves is recomputed too. Not a foreign key, so that a deleted conversation's day is still known."""

    conversation_id = models.BigIntegerField(primary_key=True)
    day = models.DateField()
    source_id = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.conversation_id} {self.day} {self.source_id}"
