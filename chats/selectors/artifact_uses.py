"""The conversations an artifact id was injected into, a page at a time, with their injections and label counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, QuerySet

from chats.models import Conversation, FeedbackLabel, InjectedArtifact


@dataclass(frozen=True, slots=True)
class Injection:
    kind: str
    tool_name: str
    tool_call_id: str
    message_key: str
    requested: bool
    resolved: bool


@dataclass(frozen=True, slots=True)
class ArtifactUse:
    conversation: Conversation
    injections: list[Injection]
    label_counts: dict[str, int]  # feedback label name -> how many times it was given


def artifact_conversations(queryset: QuerySet[Conversation], *, artifact_id: str) -> QuerySet[Conversation]:
    """The conversations of ``queryset`` the artifact was injected into (each once, whatever the injections)."""
    return queryset.filter(
        Exists(InjectedArtifact.objects.filter(conversation=OuterRef("pk"), artifact_id=artifact_id))
    )


def artifact_uses(conversations: Sequence[Conversation], *, artifact_id: str) -> list[ArtifactUse]:
    """A page of those conversations with their injections and label counts: two queries whatever the page."""
    ids = [conversation.pk for conversation in conversations]
    injections: dict[int, list[Injection]] = defaultdict(list)
    for row in (
        InjectedArtifact.objects.filter(conversation_id__in=ids, artifact_id=artifact_id)
        .order_by("id")
        .values("conversation_id", "kind", "tool_name", "requested", "resolved", "tool_call__call_id", "message__key")
    ):
        injections[row["conversation_id"]].append(
            Injection(
                kind=row["kind"],
                tool_name=row["tool_name"],
                tool_call_id=row["tool_call__call_id"],
                message_key=row["message__key"],
                requested=row["requested"],
                resolved=row["resolved"],
            )
        )
    labels: dict[int, dict[str, int]] = defaultdict(dict)
    for label_row in (
        FeedbackLabel.objects.filter(conversation_id__in=ids)
        .values("conversation_id", "label__name")
        .annotate(n=Count("id"))
        .order_by("conversation_id", "label__name")
    ):
        labels[label_row["conversation_id"]][label_row["label__name"]] = label_row["n"]
    return [
        ArtifactUse(
            conversation=conversation,
            injections=injections.get(conversation.pk, []),
            label_counts=labels.get(conversation.pk, {}),
        )
        for conversation in conversations
    ]
