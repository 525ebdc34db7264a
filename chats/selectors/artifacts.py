"""Artifacts (protocols, records, discussions, ...): every id seen, injected or only listed by an injection context
(what was permitted), with its figures; where one was injected, and the distinct payloads it was injected with.

The list is one grouped query over both tables (a UNION ALL of every sighting, GROUP BY kind and id), plus one
grouped query each for the scores and labels of the feedback on a page's artifacts: a page costs the same
whatever its number and however much data there is. Nothing is counted one row at a time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid as uuid_module
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import (
    Case,
    Count,
    DateTimeField,
    Exists,
    F,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
    Window,
)
from django.db.models.functions import MD5, Cast, Coalesce, RowNumber
from django.utils.dateparse import parse_datetime

from chats.diffs import DiffLine, line_diff
from chats.models import (
    ArtifactKind,
    ContextArtifactId,
    ContextIdState,
    Conversation,
    Feedback,
    FeedbackLabel,
    InjectedArtifact,
    Score,
    Source,
    Verdict,
)


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


# --------------------------------------------------------------------------------------------------------------
# Every artifact id seen: injected, or only listed by an injection context (what was permitted)

# Pages of the artifact list are bounded: a page costs the same whatever its number, and there are at most this many.
ARTIFACT_PAGE_SIZE = 50
MAX_ARTIFACT_PAGE = 200
NOT_PERMITTED = (Verdict.KIND_NOT_ENABLED, Verdict.NOT_LISTED)

# The list's orders: ORDER BY of the grouped query (whitelisted SQL, never built from input), then (kind, id).
_LAST = "MAX(seen.a_at)"
_FIRST = "MIN(seen.a_at)"
ARTIFACT_SORTS: dict[str, tuple[str, str]] = {
    "last_injected": ("Last injected, newest first", f"CASE WHEN {_LAST} IS NULL THEN 1 ELSE 0 END, {_LAST} DESC"),
    "first_injected": ("First injected, oldest first", f"CASE WHEN {_FIRST} IS NULL THEN 1 ELSE 0 END, {_FIRST}"),
    "last_received": (
        "Last received, newest first",
        "CASE WHEN MAX(seen.a_received) IS NULL THEN 1 ELSE 0 END, MAX(seen.a_received) DESC",
    ),
    "conversations": ("Most conversations", "injected_conversations DESC"),
    "permitted_only": ("Most only permitted", "permitted_only DESC"),
    "violations": ("Most violations", "violations DESC"),
    "artifact_id": ("Artifact id", "seen.a_id"),
}
DEFAULT_ARTIFACT_SORT = "last_injected"


@dataclass(frozen=True, slots=True)
class ScoreCounts:
    up: int = 0
    neutral: int = 0
    down: int = 0

    @property
    def total(self) -> int:
        return self.up + self.neutral + self.down


def _iso(moment: dt.datetime | None) -> str | None:
    """As the API writes times (DRF's DateTimeField): ISO 8601 in UTC, with "Z"."""
    if moment is None:
        return None
    text = moment.astimezone(dt.UTC).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


@dataclass(frozen=True, slots=True)
class ArtifactSummary:
    """One artifact (kind and id) across the conversations in scope."""

    kind: str
    artifact_id: str
    injected_conversations: int  # conversations it was injected into (requested, resolved, or both)
    permitted_only: int  # conversations whose injection context lists it but that did not inject it
    violations: int  # injections whose verdict is not "permitted" (kind not enabled, not listed)
    first_injected_at: dt.datetime | None  # the conversations' own times (None when no input gave one)
    last_injected_at: dt.datetime | None
    last_received_at: dt.datetime | None  # when the newest of its injections was received
    scores: ScoreCounts  # the feedback on the conversations that injected it
    labels: dict[str, int]  # feedback label name -> how many times, on those conversations

    def as_json(self) -> dict[str, Any]:
        """One line of the NDJSON export, and the shape of the API's items."""
        return {
            "kind": self.kind,
            "artifact_id": self.artifact_id,
            "injected_conversations": self.injected_conversations,
            "permitted_only": self.permitted_only,
            "violations": self.violations,
            "first_injected_at": _iso(self.first_injected_at),
            "last_injected_at": _iso(self.last_injected_at),
            "last_received_at": _iso(self.last_received_at),
            "scores": {"up": self.scores.up, "neutral": self.scores.neutral, "down": self.scores.down},
            "labels": self.labels,
        }


@dataclass(frozen=True, slots=True)
class ArtifactFilters:
    """What the list, its export and the dashboard select on. ``source`` is the caller's scope as well (a
    source's key sees only its own source)."""

    source: Source | None = None
    kind: str | None = None
    artifact_id: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactPage:
    artifacts: list[ArtifactSummary]
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def _given_at() -> Coalesce:
    # When the model was given the artifact, in the conversation's own time: its message's time when the input gave
    # one, else the conversation's start. Never when the document was received: an input that gives no time has
    # none here (NULL), and the list shows the received time in a column of its own (_received_at).
    return Coalesce("message__sent_at", "conversation__started_at")


def _injected_at() -> Coalesce:
    # The order of an artifact's versions: the conversation's own time, else when it was stored (every version has
    # a place in the order).
    return Coalesce("message__sent_at", "conversation__started_at", "message__created_at")


def _received_at() -> Coalesce:
    # When the injection was received and stored: its message's row, else its conversation's.
    return Coalesce("message__created_at", "conversation__created_at")


def _where(filters: ArtifactFilters, after: tuple[str, str] | None = None) -> Q:
    where = Q()
    if filters.source is not None:
        where &= Q(conversation__source=filters.source)
    if filters.kind:
        where &= Q(kind=filters.kind)
    if filters.artifact_id is not None:
        where &= Q(artifact_id=filters.artifact_id)
    if after is not None:
        kind, artifact_id = after
        where &= Q(kind__gt=kind) | Q(kind=kind, artifact_id__gt=artifact_id)
    return where


_SEEN_COLUMNS = ("a_kind", "a_id", "a_conv", "a_injected", "a_unused", "a_violation", "a_at", "a_received")


def _seen(filters: ArtifactFilters, after: tuple[str, str] | None = None) -> tuple[str, tuple[Any, ...]]:
    """SQL (and its parameters) of every sighting of an artifact in scope: one row per injection and one per id
    a context lists, in the same columns, so that one GROUP BY counts them all."""
    where = _where(filters, after)
    injected = (
        InjectedArtifact.objects.filter(where)
        .annotate(
            a_kind=F("kind"),
            a_id=F("artifact_id"),
            a_conv=F("conversation_id"),
            a_injected=Value(1),
            a_unused=Value(0),
            a_violation=Case(When(verdict__in=NOT_PERMITTED, then=Value(1)), default=Value(0)),
            a_at=_given_at(),
            a_received=_received_at(),
        )
        .order_by()
        .values(*_SEEN_COLUMNS)
    )
    listed = (
        ContextArtifactId.objects.filter(where)
        .annotate(
            a_kind=F("kind"),
            a_id=F("artifact_id"),
            a_conv=F("conversation_id"),
            a_injected=Value(0),
            a_unused=Case(When(state=ContextIdState.UNUSED, then=Value(1)), default=Value(0)),
            a_violation=Value(0),
            a_at=Cast(Value(None), DateTimeField()),
            a_received=Cast(Value(None), DateTimeField()),
        )
        .order_by()
        .values(*_SEEN_COLUMNS)
    )
    sql, params = injected.union(listed, all=True).query.sql_with_params()
    return sql, tuple(params)


_GROUPED = """
SELECT seen.a_kind, seen.a_id,
       COUNT(DISTINCT CASE WHEN seen.a_injected = 1 THEN seen.a_conv END) AS injected_conversations,
       COUNT(DISTINCT CASE WHEN seen.a_unused = 1 THEN seen.a_conv END) AS permitted_only,
       SUM(seen.a_violation) AS violations,
       {first} AS first_at,
       {last} AS last_at,
       MAX(seen.a_received) AS received_at
FROM ({seen}) seen
GROUP BY seen.a_kind, seen.a_id
ORDER BY {order}, seen.a_kind, seen.a_id
LIMIT %s OFFSET %s
"""


def _as_datetime(value: Any) -> dt.datetime | None:
    """A MIN/MAX of a timestamp over a subquery: a datetime on PostgreSQL, text on SQLite (stored in UTC)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    parsed = parse_datetime(str(value))
    if parsed is None:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _grouped(
    filters: ArtifactFilters, *, order: str, limit: int, offset: int = 0, after: tuple[str, str] | None = None
) -> list[tuple[Any, ...]]:
    seen, params = _seen(filters, after)
    sql = _GROUPED.format(first=_FIRST, last=_LAST, seen=seen, order=order)
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, limit, offset))
        return list(cursor.fetchall())


def _summaries(rows: list[tuple[Any, ...]], filters: ArtifactFilters) -> list[ArtifactSummary]:
    """The grouped rows with the feedback on their conversations: two grouped queries whatever the rows."""
    if not rows:
        return []
    keys = {(row[0], row[1]) for row in rows}
    ids = sorted({row[1] for row in rows})
    scope = Q(conversation__artifacts__artifact_id__in=ids)
    if filters.source is not None:
        scope &= Q(conversation__source=filters.source)
    scores: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for score_row in (
        Feedback.objects.filter(scope, score__isnull=False)
        .values_list("conversation__artifacts__kind", "conversation__artifacts__artifact_id", "score")
        .annotate(n=Count("id", distinct=True))
        .order_by()
    ):
        kind, artifact_id, score, n = score_row
        scores[kind, artifact_id][score] = n
    labels: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for label_row in (
        FeedbackLabel.objects.filter(scope)
        .values_list("conversation__artifacts__kind", "conversation__artifacts__artifact_id", "label__name")
        .annotate(n=Count("id", distinct=True))
        .order_by("label__name")
    ):
        kind, artifact_id, name, n = label_row
        if (kind, artifact_id) in keys:
            labels[kind, artifact_id][name] = n
    return [
        ArtifactSummary(
            kind=kind,
            artifact_id=artifact_id,
            injected_conversations=injected,
            permitted_only=permitted_only,
            violations=int(violations or 0),
            first_injected_at=_as_datetime(first_at),
            last_injected_at=_as_datetime(last_at),
            last_received_at=_as_datetime(received_at),
            scores=ScoreCounts(
                up=scores[kind, artifact_id].get(Score.UP, 0),
                neutral=scores[kind, artifact_id].get(Score.NEUTRAL, 0),
                down=scores[kind, artifact_id].get(Score.DOWN, 0),
            ),
            labels=labels.get((kind, artifact_id), {}),
        )
        for kind, artifact_id, injected, permitted_only, violations, first_at, last_at, received_at in rows
    ]


def artifact_page(
    filters: ArtifactFilters, *, sort: str = DEFAULT_ARTIFACT_SORT, number: int = 1, size: int = ARTIFACT_PAGE_SIZE
) -> ArtifactPage:
    """One page of the artifact list: three queries (the grouped figures, the scores, the labels) whatever the
    page and however many conversations, injections and ids there are."""
    number = min(max(number, 1), MAX_ARTIFACT_PAGE)
    order = ARTIFACT_SORTS.get(sort, ARTIFACT_SORTS[DEFAULT_ARTIFACT_SORT])[1]
    rows = _grouped(filters, order=order, limit=size + 1, offset=(number - 1) * size)
    has_next = len(rows) > size and number < MAX_ARTIFACT_PAGE
    return ArtifactPage(artifacts=_summaries(rows[:size], filters), number=number, has_next=has_next)


def artifact_summaries_of(filters: ArtifactFilters) -> list[ArtifactSummary]:
    """The figures of one artifact id (``filters.artifact_id``), one per kind it was seen as."""
    rows = _grouped(filters, order="seen.a_kind", limit=len(ArtifactKind.values))
    return _summaries(rows, filters)


def artifact_count(filters: ArtifactFilters) -> int:
    seen, params = _seen(filters)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM ({seen}) seen GROUP BY seen.a_kind, seen.a_id) ids", params
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def iter_artifacts(filters: ArtifactFilters, *, batch: int = 500) -> Iterator[ArtifactSummary]:
    """Every artifact in scope, by (kind, id), batch by batch (three queries per batch): for the NDJSON export.
    Batches follow (kind, id) by keyset, so an artifact seen for the first time during the stream is not repeated."""
    after: tuple[str, str] | None = None
    while True:
        rows = _grouped(filters, order="seen.a_kind, seen.a_id", limit=batch, after=after)
        yield from _summaries(rows, filters)
        if len(rows) < batch:
            return
        after = (rows[-1][0], rows[-1][1])


def artifact_lines(filters: ArtifactFilters) -> Iterator[str]:
    for summary in iter_artifacts(filters):
        yield json.dumps(summary.as_json(), ensure_ascii=False, separators=(",", ":")) + "\n"


# --------------------------------------------------------------------------------------------------------------
# One artifact id: the distinct payloads it was injected with, and the conversations that got each

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


def canonical_digest(payload: Any) -> str:
    """The version of a payload: equal JSON values have equal digests, whatever their key order or spacing."""
    if payload is None:
        return ""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()


def pretty_payload(payload: Any) -> str:
    """Indented with sorted keys, one value per line, for a line diff; a payload nested too deep for Python's
    indenting encoder (ingest stores whatever the C decoder reads) is compared as one compact line."""
    try:
        return json.dumps(payload, sort_keys=True, indent=2, ensure_ascii=False)
    except RecursionError:
        return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _payload_hash() -> MD5:
    # Grouped in the database: on PostgreSQL jsonb's text is canonical (equal values, equal text); on SQLite it is
    # the text as stored, so versions that differ only in key order are merged by canonical_digest afterwards.
    return MD5(Cast("payload", TextField()))


def artifact_versions(filters: ArtifactFilters) -> list[PayloadVersion]:
    """The distinct payloads of ``filters.artifact_id``, oldest first, each with the (newest) conversations that
    got it: three queries (the grouped versions, one payload of each, the conversations of each by a window),
    however many injections and conversations there are."""
    assert filters.artifact_id is not None
    injections = InjectedArtifact.objects.filter(_where(filters)).annotate(version=_payload_hash())
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
                partition_by=[_payload_hash()],
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
    diff = line_diff(pretty_payload(old.payload).splitlines(), pretty_payload(new.payload).splitlines())
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
