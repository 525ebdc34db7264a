"""One artifact id: the distinct payloads it was injected with (oldest first), the conversations that got each, the
line diff of two of them, and the conversations whose context lists the id without injecting it."""

from __future__ import annotations

import datetime as dt
import uuid as uuid_module
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, Max, Min, Q, Window
from django.db.models.functions import Coalesce, RowNumber

from chats.diffs import DiffLine, json_line_diff
from chats.models import ContextArtifactId, ContextIdState, Conversation, InjectedArtifact
from chats.selectors.artifacts import ArtifactFilters, artifact_where
from chats.selectors.payload_digests import canonical_digest, payload_hash

MAX_VERSIONS = 50  # the versions an artifact page shows, oldest first
CONVERSATIONS_PER_VERSION = 20  # the conversations shown under each version (newest first); the rest are counted


@dataclass(frozen=True, slots=True)
class VersionConversation:
    uuid: uuid_module.UUID
    title: str
    source: str
    verdict: str | None


@dataclass(slots=True)
class PayloadVersion:
    """A distinct payload an artifact id was injected with, identified by a hash of its canonical JSON."""

    digest: str  # sha256 of the canonical JSON (sorted keys, no spaces); "" for "injected, never resolved"
    payload: Any
    conversation_count: int
    injection_count: int
    first_injected_at: dt.datetime | None
    last_injected_at: dt.datetime | None
    conversations: list[VersionConversation] = field(default_factory=list)  # at most CONVERSATIONS_PER_VERSION

    @property
    def short(self) -> str:
        return self.digest[:12] if self.digest else "unresolved"

    @property
    def more(self) -> int:
        return max(self.conversation_count - len(self.conversations), 0)


def _injected_at() -> Coalesce:
    # The order of an artifact's versions: the conversation's own time, else when it was stored (every version has
    # a place in the order).
    return Coalesce("message__sent_at", "conversation__started_at", "message__created_at")


def artifact_versions(filters: ArtifactFilters) -> list[PayloadVersion]:
    """The distinct payloads of ``filters.artifact_id``, oldest first, each with the (newest) conversations that
    got it: three queries (the grouped versions, one payload of each, the conversations of each by a window),
    however many injections and conversations there are."""
    assert filters.artifact_id is not None
    injections = InjectedArtifact.objects.filter(artifact_where(filters)).annotate(version=payload_hash())
    groups = list(
        injections.values("version")
        .annotate(
            conversations=Count("conversation", distinct=True),
            injections=Count("id"),
            first_at=Min(_injected_at()),
            last_at=Max(_injected_at()),
            sample=Min("id"),
        )
        .order_by("first_at", "version")[: MAX_VERSIONS * 2]
    )
    payloads = dict(
        InjectedArtifact.objects.filter(pk__in=[group["sample"] for group in groups]).values_list("pk", "payload")
    )
    versions: dict[str, PayloadVersion] = {}
    digest_of: dict[str | None, str] = {}
    for group in groups:
        payload = payloads.get(group["sample"])
        digest = canonical_digest(payload)
        digest_of[group["version"]] = digest
        found = versions.get(digest)
        if found is None:
            versions[digest] = PayloadVersion(
                digest=digest,
                payload=payload,
                conversation_count=group["conversations"],
                injection_count=group["injections"],
                first_injected_at=group["first_at"],
                last_injected_at=group["last_at"],
            )
        else:  # the same JSON stored as different text (SQLite): one version
            found.conversation_count += group["conversations"]
            found.injection_count += group["injections"]
            found.first_injected_at = min(filter(None, (found.first_injected_at, group["first_at"])), default=None)
            found.last_injected_at = max(filter(None, (found.last_injected_at, group["last_at"])), default=None)
    newest = (
        injections.annotate(
            rank=Window(
                RowNumber(),
                partition_by=[payload_hash()],
                order_by=[F("conversation__last_activity_at").desc(), F("conversation_id").desc(), F("id")],
            )
        )
        .filter(rank__lte=CONVERSATIONS_PER_VERSION)
        .order_by("-conversation__last_activity_at", "-conversation_id", "id")
        .values_list(
            "version",
            "conversation__uuid",
            "conversation__title",
            "conversation__first_user_text",
            "conversation__external_id",
            "conversation__source__name",
            "verdict",
        )
    )
    seen: set[tuple[str, uuid_module.UUID]] = set()
    for version, conversation_uuid, title, first_text, external_id, source_name, verdict in newest:
        found_digest = digest_of.get(version)
        if found_digest is None or (found_digest, conversation_uuid) in seen:
            continue
        seen.add((found_digest, conversation_uuid))
        target = versions[found_digest]
        if len(target.conversations) < CONVERSATIONS_PER_VERSION:
            target.conversations.append(
                VersionConversation(conversation_uuid, title or first_text or external_id, source_name, verdict)
            )
    return list(versions.values())[:MAX_VERSIONS]


@dataclass(frozen=True, slots=True)
class PayloadDiff:
    old: PayloadVersion
    new: PayloadVersion
    lines: list[DiffLine]
    truncated: bool


def payload_diff(old: PayloadVersion, new: PayloadVersion) -> PayloadDiff:
    """A line diff of the two payloads pretty-printed (sorted keys, so that only real changes show)."""
    diff = json_line_diff(old.payload, new.payload)
    return PayloadDiff(old=old, new=new, lines=diff.lines, truncated=diff.truncated)


def listed_only_conversations(
    filters: ArtifactFilters, *, limit: int = CONVERSATIONS_PER_VERSION
) -> list[Conversation]:
    """The (newest) conversations whose context lists the id without injecting it: one query."""
    assert filters.artifact_id is not None
    where = Q(artifact_id=filters.artifact_id, state=ContextIdState.UNUSED)
    if filters.kind:
        where &= Q(kind=filters.kind)
    listed = ContextArtifactId.objects.filter(where).values("conversation_id")
    queryset = Conversation.objects.filter(id__in=listed)
    if filters.source is not None:
        queryset = queryset.filter(source=filters.source)
    return list(
        queryset.select_related("source")
        .only("uuid", "title", "first_user_text", "external_id", "source__name", "last_activity_at")
        .order_by("-last_activity_at", "-id")[:limit]
    )
