"""The Trends rollups (chats/services/trend_rollups.py) kept by the writes themselves: after an ingestion, a
reviewer's feedback and a re-ingestion that changes the conversation, each committed, the rollups equal the
counts computed directly from the rows, and a conversation whose day changes leaves its old day."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from chats.models import Conversation, Feedback, Score, Source, ToolCall, TrendDay, TrendFigure, TrendMember, TrendTally
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.trend_rollups import trends_rollup

pytestmark = pytest.mark.django_db

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Why are there nonspecific PCR bands?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{not json"}},
            {"id": "call_2", "type": "function", "function": {"name": "fetch", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_2", "content": "fetched"},
    {"role": "assistant", "content": "Primer dimers, most likely."},
]


def _document(chat_id: str, start: str, messages: list[dict[str, Any]], scores: list[int]) -> dict[str, Any]:
    return {
        "chat_id": chat_id,
        "user_id": "u-1",
        "start_time": start,
        "model": {"name": "gpt-4o"},
        "main_messages": messages,
        "human_feedback": [{"score": score} for score in scores],
    }


def _rollups() -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    days = set(
        TrendDay.objects.values_list(
            "day", "source_id", "model_name", "workflow", "conversations", "messages", "scored", "down", "score_sum"
        )
    )
    tallies = set(TrendTally.objects.values_list("day", "source_id", "figure", "name", "conversations"))
    return days, tallies


def _direct(day: dt.date, source: Source) -> dict[str, int]:
    """The day's figures computed from the rows."""
    conversations = [
        conversation
        for conversation in Conversation.objects.filter(source=source)
        if conversation.last_activity_at.astimezone(dt.UTC).date() == day
    ]
    scores: list[list[int]] = [
        [
            score
            for score in Feedback.objects.filter(conversation=c).values_list("score", flat=True)
            if score is not None
        ]
        for c in conversations
    ]

    def calls(conversation: Conversation, **where: Any) -> Any:
        return ToolCall.objects.filter(conversation=conversation, **where)

    return {
        "conversations": len(conversations),
        "messages": sum(c.message_count for c in conversations),
        "scored": sum(1 for s in scores if s),
        "down": sum(1 for s in scores if Score.DOWN in s),
        "score_sum": sum(sum(s) for s in scores),
        # Per tool, the conversations with such a call of it: (conversation, tool) pairs.
        "invalid": len(
            {(c.pk, name) for c in conversations for name in calls(c).exclude(arguments_error="").values_list("name")}
        ),
        "unanswered": len(
            {(c.pk, name) for c in conversations for name in calls(c, result_message__isnull=True).values_list("name")}
        ),
    }


def _rolled(day: dt.date, source: Source) -> dict[str, int]:
    rows = TrendDay.objects.filter(day=day, source=source)
    tallies = TrendTally.objects.filter(day=day, source=source)
    return {
        "conversations": sum(row.conversations for row in rows),
        "messages": sum(row.messages for row in rows),
        "scored": sum(row.scored for row in rows),
        "down": sum(row.down for row in rows),
        "score_sum": sum(row.score_sum for row in rows),
        "invalid": sum(t.conversations for t in tallies.filter(figure=TrendFigure.INVALID_ARGUMENTS)),
        "unanswered": sum(t.conversations for t in tallies.filter(figure=TrendFigure.UNANSWERED)),
    }


def test_the_rollups_follow_ingestion_feedback_and_reingestion(
    source: Source, reviewer: User, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    day = dt.date(2026, 3, 4)
    with django_capture_on_commit_callbacks(execute=True):
        first = conversation_ingest(
            source=source, document=_document("c-1", "2026-03-04T10:00:00Z", HISTORY[:2], [1])
        ).conversation
        conversation_ingest(source=source, document=_document("c-2", "2026-03-04T23:30:00Z", HISTORY, [-1, 1]))
        conversation_ingest(source=source, document=_document("c-3", "2026-03-05T00:30:00Z", HISTORY[:1], []))
    assert first is not None
    assert _rolled(day, source) == _direct(day, source)
    assert _rolled(day, source)["conversations"] == 2
    assert _rolled(day, source)["unanswered"] == 3  # search in both, fetch in the first

    # A reviewer's thumbs down on the first: its day's share changes, with no ingestion.
    with django_capture_on_commit_callbacks(execute=True):
        feedback_submit(author=reviewer, conversation=first, score=Score.DOWN)
    assert _rolled(day, source) == _direct(day, source)
    assert _rolled(day, source)["down"] == 2

    # The first again, with its tool answered, more messages, and its imported score withdrawn.
    with django_capture_on_commit_callbacks(execute=True):
        again = conversation_ingest(source=source, document=_document("c-1", "2026-03-04T10:00:00Z", HISTORY, []))
    assert again.outcome != "unchanged"
    assert _rolled(day, source) == _direct(day, source)
    assert _rolled(day, source)["messages"] == _direct(day, source)["messages"] > 0

    # What the writes kept equals a rebuild from nothing.
    kept = _rollups()
    TrendDay.objects.all().delete()
    call_command("rollup_trends", stdout=io.StringIO())
    assert _rollups() == kept


def test_a_conversation_that_changes_day_leaves_the_old_one(source: Source, other_source: Source) -> None:
    result = conversation_ingest(source=source, document=_document("c-1", "2026-03-04T10:00:00Z", HISTORY, [-1]))
    conversation = result.conversation
    assert conversation is not None
    trends_rollup([conversation.pk])
    assert TrendMember.objects.get(conversation_id=conversation.pk).day == dt.date(2026, 3, 4)

    Conversation.objects.filter(pk=conversation.pk).update(
        last_activity_at=dt.datetime(2026, 3, 9, 12, tzinfo=dt.UTC), source=other_source
    )
    trends_rollup([conversation.pk])
    assert not TrendDay.objects.filter(day=dt.date(2026, 3, 4)).exists()
    assert not TrendTally.objects.filter(day=dt.date(2026, 3, 4)).exists()
    assert _rolled(dt.date(2026, 3, 9), other_source) == _direct(dt.date(2026, 3, 9), other_source)
    assert _rolled(dt.date(2026, 3, 9), other_source)["down"] == 1

    # Deleted: its day is recomputed from the day it was rolled up under.
    Conversation.objects.filter(pk=conversation.pk).delete()
    trends_rollup([conversation.pk])
    assert not TrendDay.objects.exists() and not TrendMember.objects.exists()
    trends_rollup([conversation.pk])  # idempotent
    assert not TrendDay.objects.exists()
