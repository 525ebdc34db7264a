"""Team review test data: a rubric with one question of each type, leads, and queues full of conversations."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User

from chats.models import Conversation, Queue, Source
from chats.services.review import queue_add_conversations, queue_create
from tests.factories import make_conversation

QUESTIONS: list[dict[str, Any]] = [
    {
        "key": "correct",
        "prompt": "Is the answer correct?",
        "type": "categorical",
        "options": ["correct", "partly", "wrong"],
        "target": "conversation",
    },
    {
        "key": "issues",
        "prompt": "What went wrong?",
        "type": "multi_label",
        "options": ["hallucination", "unsafe", "off_topic"],
        "target": "conversation",
    },
    {
        "key": "quality",
        "prompt": "How good is each answer?",
        "type": "ordinal",
        "scale": {"min": 1, "max": 5, "labels": {"1": "useless", "5": "excellent"}},
        "target": "role:assistant",
    },
    {"key": "tools_ok", "prompt": "Were the tools used well?", "type": "boolean", "target": "conversation"},
    {"key": "note", "prompt": "Anything else?", "type": "text", "target": "conversation"},
]

ANSWERS: dict[str, Any] = {
    "correct": "partly",
    "issues": ["hallucination"],
    "quality": {},  # the queues' conversations (fill_queue) have no assistant message
    "tools_ok": True,
    "note": "The second step is wrong.",
}


def make_lead(username: str = "lena") -> User:
    user = User.objects.create_user(username=username, password="correct horse battery staple")
    user.groups.add(Group.objects.get_or_create(name="Leads")[0])
    return user


def make_queue(
    lead: User,
    members: list[User],
    *,
    reviews_per_item: Any = 2,
    name: str = "Answers",
    questions: Any = None,
) -> Queue:
    return queue_create(
        actor=lead,
        name=name,
        questions=QUESTIONS if questions is None else questions,
        instructions="Judge the **last** answer.",
        reviews_per_item=reviews_per_item,
        members=members,
    )


def fill_queue(queue: Queue, lead: User, source: Source, n: int, *, n_messages: int = 2) -> list[Conversation]:
    conversations = [make_conversation(source, n_messages=n_messages, with_tools=False) for _ in range(n)]
    queue_add_conversations(
        actor=lead, queue=queue, conversations=Conversation.objects.filter(pk__in=[c.pk for c in conversations])
    )
    return conversations
