"""The app's models, split by concern and importable from here (Django loads an app's models from this module).

- ``sources``: the systems that send conversations, and the API keys of sources and people.
- ``conversations``: conversations, messages, tool calls, injected artifacts and the ids an injection context
  lists, their choices, and the SQL of the full-text search document.
- ``feedback``: the label taxonomy and the feedback given on conversations and messages.
- ``records``: ingestion receipts and their payloads, the bytes each API key sent per day, the audit log and
  its checkpoints, and who viewed a conversation.
- ``review``: team review queues, their rules, their versioned rubrics, items, leases, reviews and resolutions,
  and datasets (frozen snapshots of gold items).
- ``model_calls``: the model calls instrumented applications report (OpenTelemetry spans).
- ``jobs``: background export jobs and the chunks of their results, and the runs of queue rules.
- ``trends``: the Trends page's daily rollups, and the day each conversation was rolled up under.
- ``views``: saved views of the conversation list (a named filter set and order, personal or shared).
"""

from chats.models.conversations import (
    ArtifactKind,
    ContentForm,
    ContextArtifactId,
    ContextIdState,
    Conversation,
    InjectedArtifact,
    InputFormat,
    Message,
    ReviewStatus,
    Role,
    Section,
    ToolCall,
    Verdict,
)
from chats.models.feedback import Feedback, FeedbackLabel, FeedbackOrigin, Label, Score
from chats.models.jobs import ExportJob, ExportJobPart, JobState, QueueRuleRun
from chats.models.model_calls import ModelCall
from chats.models.records import (
    AUDIT_EVENT_CONTENT,
    AUDIT_GENESIS_HASH,
    AUDIT_VERIFIED_ACTION,
    ApiKeyDailyUsage,
    AuditCheckpoint,
    AuditEvent,
    IngestionReceipt,
    Outcome,
    ReadEvent,
    ReceiptPayload,
    ShownPayload,
    ViewedVia,
)
from chats.models.review import (
    MAX_LEASE_MINUTES,
    MAX_REVIEWS_PER_ITEM,
    Dataset,
    DatasetFormat,
    DatasetItem,
    DatasetLine,
    Lease,
    Queue,
    QueueItem,
    QueueRule,
    Resolution,
    Review,
    ReviewState,
    RubricVersion,
)
from chats.models.sources import ApiKey, ApiKeyQuerySet, Source
from chats.models.trends import TrendDay, TrendFigure, TrendMember, TrendTally
from chats.models.views import MAX_VIEW_NAME, MAX_VIEW_QUERY, SavedView, SavedViewQuerySet

__all__ = [
    "AUDIT_EVENT_CONTENT",
    "AUDIT_GENESIS_HASH",
    "AUDIT_VERIFIED_ACTION",
    "MAX_LEASE_MINUTES",
    "MAX_REVIEWS_PER_ITEM",
    "MAX_VIEW_NAME",
    "MAX_VIEW_QUERY",
    "ApiKey",
    "ApiKeyDailyUsage",
    "ApiKeyQuerySet",
    "ArtifactKind",
    "AuditCheckpoint",
    "AuditEvent",
    "ContentForm",
    "ContextArtifactId",
    "ContextIdState",
    "Conversation",
    "Dataset",
    "DatasetFormat",
    "DatasetItem",
    "DatasetLine",
    "ExportJob",
    "ExportJobPart",
    "Feedback",
    "FeedbackLabel",
    "FeedbackOrigin",
    "IngestionReceipt",
    "InjectedArtifact",
    "InputFormat",
    "JobState",
    "Label",
    "Lease",
    "Message",
    "ModelCall",
    "Outcome",
    "Queue",
    "QueueItem",
    "QueueRule",
    "QueueRuleRun",
    "ReadEvent",
    "ReceiptPayload",
    "Resolution",
    "Review",
    "ReviewState",
    "ReviewStatus",
    "Role",
    "RubricVersion",
    "SavedView",
    "SavedViewQuerySet",
    "Score",
    "Section",
    "ShownPayload",
    "Source",
    "ToolCall",
    "TrendDay",
    "TrendFigure",
    "TrendMember",
    "TrendTally",
    "Verdict",
    "ViewedVia",
]
