"""Feedback: the entries as a list shows them, one target's entries for the pages, and the conversation, message
and labels a feedback request names."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db.models import QuerySet

from chats.errors import InvalidInput
from chats.models import Conversation, Feedback, Label, Message


def feedback_list(queryset: QuerySet[Feedback]) -> QuerySet[Feedback]:
    """``queryset`` with what an entry shows and the services read: its author, target and labels."""
    return queryset.select_related("author", "conversation", "message").prefetch_related("labels")


def feedback_for_target(conversation: Conversation, message: Message | None) -> list[Feedback]:
    """The feedback on one message (or on the conversation itself), for re-rendering its block."""
    return list(
        Feedback.objects.filter(conversation=conversation, message=message)
        .select_related("author")
        .prefetch_related("labels")
    )


def feedback_target(
    conversations: QuerySet[Conversation], *, conversation: uuid.UUID, message_key: str | None
) -> tuple[Conversation, Message | None]:
    """The conversation (one of ``conversations``, those the caller may see) and the message a new feedback names.

    A target that does not exist is an error in the request, at the field that names it.
    """
    found = conversations.filter(uuid=conversation).first()
    if found is None:
        raise InvalidInput([{"path": "/conversation", "message": "no such conversation"}])
    if message_key is None:
        return found, None
    message = Message.objects.filter(conversation=found, key=message_key).first()
    if message is None:
        raise InvalidInput([{"path": "/message", "message": "no message with this key in the conversation"}])
    return found, message


def labels_named(names: Sequence[str]) -> list[Label]:
    """The labels named, each once, in the order given. Every unknown name is an error at its index."""
    found = {label.name: label for label in Label.objects.filter(name__in=names)}
    unknown = [
        {"path": f"/labels/{index}", "message": f"no label named {name!r}"}
        for index, name in enumerate(names)
        if name not in found
    ]
    if unknown:
        raise InvalidInput(unknown)
    return [found[name] for name in dict.fromkeys(names)]
