"""Conversations that a source keeps sending: a chat_document history it grows turn by turn or branches, and a
one-question queue whose items get reviewed and resolved through the services."""

from __future__ import annotations

import uuid
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from chats.models import Conversation, Queue, QueueItem, Source
from chats.services.review import item_lease_next, item_resolve, queue_add_conversations, review_submit
from tests.factories import ingest, make_messages
from tests.factories.review import make_queue

QUESTIONS: list[dict[str, Any]] = [
    {"key": "helpful", "prompt": "Was it helpful?", "type": "boolean", "target": "conversation"},
]


@dataclass
class Chat:
    """A conversation as its source sends it: the document, resent whole after each change."""

    source: Source
    document: dict[str, Any]
    conversation: Conversation = field(init=False)
    turns: int = 0

    def __post_init__(self) -> None:
        self.conversation = ingest(self.source, self.document, format="chat_document")

    @classmethod
    def start(cls, source: Source, n_messages: int = 3) -> Chat:
        document = {
            "chat_id": f"pin.chat.{uuid.uuid4()}",
            "user_id": "u7",
            "model": "qwen3.5-flash",
            "main_messages": make_messages(n_messages, with_tools=False),
        }
        return cls(source, document)

    def grow(self, turns: int = 1) -> None:
        """The source appends `turns` user/assistant exchanges and sends the whole history again."""
        document = deepcopy(self.document)
        for _ in range(turns):
            self.turns += 1
            document["main_messages"] += [
                {"role": "user", "content": f"Follow-up {self.turns}?"},
                {"role": "assistant", "content": f"NEW ANSWER {self.turns}, never reviewed."},
            ]
        self.document = document
        self.conversation = ingest(self.source, document, format="chat_document")

    def regenerate(self) -> None:
        """The source regenerates the last answer: a branch at the last message, which becomes the active one."""
        self.turns += 1
        document = deepcopy(self.document)
        document["main_messages"][-1] = {"role": "assistant", "content": f"REGENERATED {self.turns}."}
        self.document = document
        self.conversation = ingest(self.source, document, format="chat_document")


def one_question_queue(lead: User, reviewer: User, chats: list[Chat], *, name: str = "Pins") -> Queue:
    queue = make_queue(lead, [reviewer], reviews_per_item=1, name=name, questions=QUESTIONS)
    ids = [chat.conversation.pk for chat in chats]
    queue_add_conversations(actor=lead, queue=queue, conversations=Conversation.objects.filter(pk__in=ids))
    return queue


def review_and_resolve(queue: Queue, lead: User, reviewer: User, *, correction: str = "") -> list[QueueItem]:
    """The reviewer takes every item in turn (next item) and submits; the lead resolves each."""
    items = []
    while (item := item_lease_next(queue=queue, reviewer=reviewer)) is not None:
        review_submit(reviewer=reviewer, item=item, answers={"helpful": True})
        item_resolve(actor=lead, item=item, answers={"helpful": False}, correction=correction)
        items.append(item)
    return items
