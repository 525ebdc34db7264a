"""The planner's inputs and outputs, as plain data: a snapshot of a stored conversation (`Stored`) and a `Plan`.

Messages are referred to by *refs*: a stored message by its primary key (>= 0), a message of the plan by
``new_ref(index)`` (< 0). Tool calls likewise (stored primary key, or ``new_ref`` of the plan's call index).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import EnumType, StrEnum
from typing import Any

from chats.formats import canonical as c
from chats.ingest.policy import ContextId

# Conversation fields a later document may change (input_format stays: exports in it give the original back).
COMPARED_FIELDS = (
    "title",
    "user_external_id",
    "model_name",
    "model_config",
    "started_at",
    "ended_at",
    "scenario",
    "injection_context",
    "context_pairs",
    "metadata",
    "original_times",
)
# The summary columns a plan sets.
SUMMARY_FIELDS = (
    "message_count",
    "tool_call_count",
    "artifact_count",
    "branch_count",
    "feedback_count",
    "score_up",
    "score_down",
    "first_user_text",
    "policy_violation",  # None: the conversation has no injection context (see chats.ingest.policy)
    "workflow",  # the workflow the scenario in force names (planner.workflow_of)
)

# Column widths of fields that are text, not ids: longer values are cut by the planner, once (the message's `raw`
# and the receipt keep them whole). Ids are never cut.
TITLE_LIMIT = 500
USER_LIMIT = 255
MODEL_NAME_LIMIT = 200
ROLE_LIMIT = 64
NAME_LIMIT = 255
CALL_TYPE_LIMIT = 32
FIRST_USER_TEXT_LIMIT = 300
WORKFLOW_LIMIT = 200


class _ChoicesType(EnumType):
    """An enumeration that offers what Django's choices do (`values`, `choices`, labelled as TextChoices labels an
    unlabelled member), without Django: a model field takes its choices from it."""

    @property
    def values(cls) -> list[str]:
        return [member.value for member in cls]  # type: ignore[var-annotated]

    @property
    def choices(cls) -> list[tuple[str, str]]:
        return [(member.value, member.name.replace("_", " ").title()) for member in cls]  # type: ignore[var-annotated]


class Outcome(StrEnum, metaclass=_ChoicesType):
    """What became of a document, as its receipt and the API say: the one list of them (the receipt model's
    choices, and `chats.models.Outcome`, are this)."""

    # Received and stored, waiting for a worker to apply it (an asynchronous bulk ingest): it becomes one of the
    # others, in the transaction that stores the conversation.
    QUEUED = "queued"
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    REJECTED = "rejected"


class Change(StrEnum):
    """What a plan does to its conversation, as the planner decides it: the receipt's outcome (`outcome`) and the
    audit event's action follow from it."""

    CREATED = "created"
    BRANCHED = "branched"  # it has more leaves than before
    APPENDED = "appended"  # messages added, on no new branch
    UPDATED = "updated"  # fields, feedback, verdicts or the active path changed, no message added
    UNCHANGED = "unchanged"

    @property
    def outcome(self) -> Outcome:
        if self is Change.CREATED:
            return Outcome.CREATED
        return Outcome.UNCHANGED if self is Change.UNCHANGED else Outcome.UPDATED


def new_ref(index: int) -> int:
    """The ref of the plan's message (or call) number `index`."""
    return -1 - index


def new_index(ref: int) -> int:
    return -1 - ref


# --------------------------------------------------------------------------------------------------------------
# What is stored


@dataclass(slots=True)
class StoredMessage:
    pk: int
    key: str
    parent: int | None
    depth: int
    position: int
    role: str
    content_key: uuid.UUID | None
    aliases: list[str]
    on_active_path: bool


@dataclass(slots=True)
class StoredCall:
    pk: int
    call_id: str
    message: int
    result: int | None


@dataclass(slots=True)
class StoredArtifact:
    pk: int
    call_id: str
    artifact_id: str
    resolved: bool
    kind: str
    requested: bool
    verdict: str | None


@dataclass(slots=True)
class StoredFeedback:
    pk: int
    message: int | None
    origin: str
    score: int | None
    comment: str
    raw: Any


@dataclass
class Stored:
    """A stored conversation, as much of it as the planner needs."""

    pk: int
    external_id: str
    input_format: str
    active_leaf_key: str
    fields: dict[str, Any]  # COMPARED_FIELDS
    summary: dict[str, Any]  # SUMMARY_FIELDS
    messages: list[StoredMessage] = field(default_factory=list)
    calls: list[StoredCall] = field(default_factory=list)
    artifacts: list[StoredArtifact] = field(default_factory=list)
    feedback: list[StoredFeedback] = field(default_factory=list)  # imported feedback only


# --------------------------------------------------------------------------------------------------------------
# The plan


@dataclass(slots=True)
class MessageRow:
    message: c.Message
    key: str
    parent: int | None  # ref
    position: int
    depth: int
    sibling_index: int
    content_key: uuid.UUID
    aliases: list[str]
    # The message exactly as received, to be stored; None where its canonical fields give it back
    # (chats.formats.openai_messages.rebuilds_as_received): a tool result is then stored once, not twice.
    raw: Any = None
    on_active_path: bool = False
    is_orphan_result: bool = False
    role: str = ""
    name: str = ""
    recipient: str = ""


@dataclass(slots=True)
class CallRow:
    message: int  # ref
    call_id: str  # as stored: a repeated id gets the message's key appended
    call: c.ToolCall
    result: int | None  # ref of the message that answers it
    type: str = ""
    name: str = ""


@dataclass(slots=True)
class ArtifactRow:
    message: int  # ref
    call: int  # call ref
    artifact: c.Artifact
    tool_name: str = ""
    verdict: str | None = None  # None: the conversation has no injection context


@dataclass(slots=True)
class FeedbackRow:
    message: int | None  # ref; None: the whole conversation
    feedback: c.Feedback


@dataclass(frozen=True, slots=True)
class Creation:
    """The values a conversation a plan creates starts with, besides its fields and summary (both writers copy
    them): its public id, when it was last active (the document's start, else when it is stored), and its review
    state."""

    uuid: uuid.UUID
    last_activity_at: datetime
    review_status: str = "unreviewed"


@dataclass
class Plan:
    change: Change
    external_id: str
    external_id_generated: bool
    fields: dict[str, Any]  # conversation columns to write: all of them when created, else the changed ones
    before: dict[str, Any] | None  # the audited state before (None when created)
    summary: dict[str, Any]
    active_leaf_key: str | None  # None: unchanged
    messages: list[MessageRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    artifacts: list[ArtifactRow] = field(default_factory=list)
    feedback: list[FeedbackRow] = field(default_factory=list)
    feedback_updates: list[tuple[int, c.Feedback]] = field(default_factory=list)  # (stored pk, new values)
    feedback_withdrawn: list[StoredFeedback] = field(default_factory=list)
    aliases: dict[int, list[str]] = field(default_factory=dict)  # stored message pk -> all its aliases now
    call_results: dict[int, int] = field(default_factory=dict)  # stored call pk -> ref of its (late) answer
    resolved_artifacts: dict[int, Any] = field(default_factory=dict)  # stored artifact pk -> resolved payload
    # The policy verdicts (chats.ingest.policy), decided again at every ingestion: stored artifact pk -> its new
    # verdict, for those whose verdict changes; and the ids the context lists with their state, all of them, when
    # the context or the injections changed (they replace the stored ones; None: the stored ones stay).
    verdicts: dict[int, str | None] = field(default_factory=dict)
    context_ids: list[ContextId] | None = None
    path_on: list[int] = field(default_factory=list)  # stored messages that join the active path
    path_off: list[int] = field(default_factory=list)  # stored messages that leave it
    warnings: list[dict[str, str]] = field(default_factory=list)
    creation: Creation | None = None  # when the plan creates the conversation

    @property
    def outcome(self) -> Outcome:
        return self.change.outcome

    @property
    def created(self) -> bool:
        return self.change is Change.CREATED

    @property
    def messages_added(self) -> int:
        return len(self.messages)
