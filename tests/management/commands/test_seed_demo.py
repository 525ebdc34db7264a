"""seed_demo: the demo data, loaded the same however often it runs."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

from chats.models import AuditEvent, Conversation, Feedback, Message, ToolCall

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _state() -> dict[str, Any]:
    return {
        "conversations": list(
            Conversation.objects.order_by("id").values_list(
                "id", "external_id", "review_status", "message_count", "feedback_count"
            )
        ),
        "messages": Message.objects.count(),
        "tool_calls": ToolCall.objects.count(),
        "feedback": list(Feedback.objects.order_by("id").values_list("id", "score", "comment")),
        "audit": AuditEvent.objects.count(),
    }


def test_seed_demo_twice_equals_once():
    run("seed_demo")
    once = _state()

    run("seed_demo")

    assert _state() == once
    assert 40 <= len(once["conversations"]) <= 70
    assert Conversation.objects.filter(branch_count__gt=0).exists()
    assert ToolCall.objects.filter(result_message__isnull=True).exists()  # an unanswered call
    assert (
        Feedback.objects.filter(origin="masterbrain").exists() and Feedback.objects.filter(origin="reviewer").exists()
    )
    assert set(Conversation.objects.values_list("input_format", flat=True)) >= {
        "openai",
        "chat_document",
        "record_qa",
        "chat_history",
        "chat_graph",
        "chatgpt_export",
    }
