"""Reads of team review: a queue's current rubric."""

from __future__ import annotations

from chats.models import Queue, RubricVersion


def current_rubric(queue: Queue) -> RubricVersion:
    """The queue's latest rubric version (every queue is created with one)."""
    return RubricVersion.objects.filter(queue=queue).latest("version")
