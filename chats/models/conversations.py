"""The canonical conversation (design notes §2): conversations, their messages (a tree, in order of arrival), the
tool calls those messages make and the artifacts injected by them, the ids a Record QA context lists (with the
policy verdicts of §4, decided by ``chats.ingest.policy``), with the choices their fields take and the SQL of a
conversation's full-text search document.

Scaling note (§6): every table under a conversation carries ``conversation_id`` and its unique constraints include
it, and no foreign key crosses conversations except to small reference tables (sources, labels, users), so the
tables can be distributed and co-located by conversation.
"""

from __future__ import annotations

import hashlib
import uuid

from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import MD5
from django.urls import reverse
from django.utils import timezone

from chats.ingest import policy
from chats.models.checks import choices_check
from chats.models.sources import Source


class InputFormat(models.TextChoices):
    OPENAI = "openai", "OpenAI messages"
    CHAT_DOCUMENT = "chat_document", "Masterbrain chat document"
    RECORD_QA = "record_qa", "Record QA"
    CHAT_HISTORY = "chat_history", "Chat history"
    CHAT_GRAPH = "chat_graph", "Chat graph"
    CHATGPT_EXPORT = "chatgpt_export", "ChatGPT export"
    OPENWEBUI = "openwebui", "Open WebUI export"


class ReviewStatus(models.TextChoices):
    UNREVIEWED = "unreviewed", "Unreviewed"
    IN_REVIEW = "in_review", "In review"
    REVIEWED = "reviewed", "Reviewed"


class Conversation(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # No index of its own: the unique (source, external id digest) index starts with it.
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="conversations", db_index=False)
    # Whatever the input calls the conversation, never cut short; identity is (source, a digest of it), so that
    # ids of any length are told apart by an index of fixed width.
    external_id = models.TextField()
    external_id_digest = models.CharField(max_length=64, editable=False, default="")
    external_id_generated = models.BooleanField(default=False)
    input_format = models.CharField(max_length=20, choices=InputFormat.choices)
    title = models.CharField(max_length=500, blank=True)
    user_external_id = models.CharField("user", max_length=255, blank=True)
    model_name = models.CharField("model", max_length=200, blank=True)
    model_config = models.JSONField("model as given", null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    scenario = models.JSONField(null=True, blank=True)
    # The scenario's workflow (chats.ingest.planner.workflow_of), kept apart so that ?workflow= reads an index;
    # "" when the scenario names none. Set by the planner whenever the scenario in force changes.
    workflow = models.CharField(max_length=200, blank=True, default="", db_default="")
    injection_context = models.JSONField(null=True, blank=True)
    context_pairs = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Timestamps as the input wrote them (their offset included), by input key: exports give them back.
    original_times = models.JSONField(default=dict, blank=True)
    active_leaf_key = models.TextField(blank=True)
    review_status = models.CharField(max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.UNREVIEWED)

    # Derived summaries, maintained by the services so that lists never aggregate over messages.
    message_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    artifact_count = models.PositiveIntegerField(default=0)
    branch_count = models.PositiveIntegerField(default=0)  # leaves beyond the first: 0 means a linear thread
    feedback_count = models.PositiveIntegerField(default=0)
    score_up = models.PositiveIntegerField(default=0)
    score_down = models.PositiveIntegerField(default=0)
    first_user_text = models.CharField(max_length=300, blank=True)
    # Whether any injection was not permitted by the injection context (chats.ingest.policy); None: the
    # conversation has no context, so nothing was stated and nothing is judged.
    policy_violation = models.BooleanField(null=True, blank=True)
    # The title's full-text vector, which search reads beside the messages' own (chats.selectors.search). On
    # PostgreSQL a trigger builds it as the row is written, and a GIN index serves it; SQLite, which has no
    # tsvector, searches the title's text instead.
    title_vector = SearchVectorField(null=True, editable=False)

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    # started_at when the input has one, else the time of the first ingestion: the list's sort key.
    last_activity_at = models.DateTimeField(default=timezone.now)

    class Meta:
        permissions = [
            ("review_conversation", "Can set the review status of a conversation"),
            ("export_conversation", "Can export conversations"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "external_id_digest"], name="conversation_unique_source_external_id_digest"
            ),
            choices_check("conversation_input_format_valid", "input_format", InputFormat),
            choices_check("conversation_review_status_valid", "review_status", ReviewStatus),
        ]
        indexes = [
            # The list, newest first, and keyset pagination over it: ORDER BY last_activity_at DESC, id DESC.
            models.Index(fields=["-last_activity_at", "-id"], name="conv_activity_idx"),
            # ?source=&... newest first.
            models.Index(fields=["source", "-last_activity_at"], name="conv_source_activity_idx"),
            # ?model=... newest first.
            models.Index(fields=["model_name", "-last_activity_at"], name="conv_model_activity_idx"),
            # ?user=...
            models.Index(fields=["user_external_id"], name="conv_user_idx"),
            # ?status=unreviewed and the "next unreviewed" queue.
            models.Index(fields=["review_status", "-last_activity_at"], name="conv_status_activity_idx"),
            # ?has_tool_calls=true: a partial index over the conversations that have any.
            models.Index(fields=["-last_activity_at"], condition=Q(tool_call_count__gt=0), name="conv_with_tools_idx"),
            # ?policy=violation (= true), permitted (= false) or no_context (IS NULL), newest first.
            models.Index(fields=["policy_violation", "-last_activity_at", "-id"], name="conv_policy_activity_idx"),
            # ?workflow=protocol_qa, newest first: only the conversations whose scenario names a workflow.
            models.Index(
                fields=["workflow", "-last_activity_at", "-id"],
                condition=~Q(workflow=""),
                name="conv_workflow_activity_idx",
            ),
            # ?model_setting=enable_thinking=true (model_config @> '{"enable_thinking": true}'): on PostgreSQL a
            # GIN index (jsonb_path_ops) over model_config, created by migration 0010 (SQLite has no GIN).
        ]

    def __str__(self) -> str:
        return self.title or self.external_id

    def get_absolute_url(self) -> str:
        return reverse("chats:thread", args=[self.uuid])

    @staticmethod
    def digest_of(external_id: str) -> str:
        """The identity index's key of an external id (ids that differ anywhere have different digests)."""
        return hashlib.sha256(external_id.encode(errors="surrogatepass")).hexdigest()

    @property
    def display_title(self) -> str:
        return self.title or self.first_user_text or self.external_id


class Role(models.TextChoices):
    """Roles with a meaning to the application. Any other string is stored as given."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    FUNCTION = "function"


class ContentForm(models.TextChoices):
    STRING = "string"
    PARTS = "parts"
    NULL = "null"


class Section(models.TextChoices):
    MAIN = "main"
    SCENARIO = "scenario"


class Message(models.Model):
    # On PostgreSQL each message also has a full-text vector of its text, `search_vector`, which is not a field
    # here: a trigger builds it in the statement that writes the row (COPY included), from the first
    # MASTERBRAIN_SEARCH_MESSAGE_CHARS characters, and a GIN index serves ?q= (chats.selectors.search). No model
    # reads it, so no query carries it. Migration 0034 made it; chats.search_schema keeps its cap.
    # No index of its own: the unique (conversation, position) index starts with it and serves every lookup by
    # it, and each index is paid for by every message ingested.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False)
    key = models.TextField()  # the first identity it came with: an input id, or "h:" and its content key
    # A digest of the message's own content and its parent's content key: the same path of messages has the same
    # key in every format. Finds the conversation of a document that carries no id.
    content_key = models.UUIDField(null=True, blank=True)
    aliases = models.JSONField(default=list, blank=True)  # the input ids it is known by (node ids, mapping ids)
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    position = models.PositiveIntegerField()  # order of arrival in the conversation, 0-based
    depth = models.PositiveIntegerField()  # 0 for a root: the position along any path from the root
    sibling_index = models.PositiveIntegerField(default=0)  # among the parent's children, by arrival
    on_active_path = models.BooleanField(default=True)
    role = models.CharField(max_length=64)
    name = models.CharField(max_length=255, blank=True)
    section = models.CharField(max_length=16, choices=Section.choices, default=Section.MAIN)
    content_form = models.CharField(max_length=8, choices=ContentForm.choices, default=ContentForm.STRING)
    parts = models.JSONField(default=list, blank=True)
    text = models.TextField(blank=True)
    reasoning = models.TextField(blank=True)
    context_pairs = models.JSONField(default=list, blank=True)
    author_metadata = models.JSONField(default=dict, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    tool_call_id = models.TextField(blank=True)
    is_orphan_result = models.BooleanField(default=False)  # a tool result whose id matches no call
    hidden = models.BooleanField(default=False)
    recipient = models.CharField(max_length=255, blank=True)
    extra = models.JSONField(default=dict, blank=True)  # unknown keys, verbatim
    # The message exactly as received, when its canonical fields do not give it back; None when they do
    # (chats.formats.openai_messages.rebuilds_as_received: most OpenAI-shaped messages), so that its text is
    # stored once.
    raw = models.JSONField(null=True, blank=True)
    # Where the message stood in the document it first came in ("/main_messages/3", "/nodes/7"): an export in
    # that format puts it back under the same key.
    source_path = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(F("conversation"), MD5("key"), name="message_unique_conversation_key_md5"),
            models.UniqueConstraint(fields=["conversation", "position"], name="message_unique_conversation_position"),
            choices_check("message_section_valid", "section", Section),
            choices_check("message_content_form_valid", "content_form", ContentForm),
        ]
        indexes = [
            # The thread page: WHERE conversation_id = ? AND on_active_path ORDER BY depth.
            models.Index(
                fields=["conversation", "depth"], condition=Q(on_active_path=True), name="msg_active_path_idx"
            ),
            # Branch switcher: siblings of a message, WHERE conversation_id = ? AND parent_id = ?.
            models.Index(fields=["conversation", "parent"], name="msg_parent_idx"),
            # A document without an id: which stored message has the content key of one of its messages.
            models.Index(fields=["content_key"], name="msg_content_key_idx"),
            # ?has_warnings=orphan_result: the few conversations with a tool result that answers no call.
            models.Index(fields=["conversation"], condition=Q(is_orphan_result=True), name="msg_orphan_result_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.position}"

    @property
    def excerpt(self) -> str:
        text = " ".join(self.text.split())
        return text if len(text) <= 160 else text[:159] + "…"


class ToolCall(models.Model):
    # No indexes of their own: the unique (conversation, call id) and the (message, index) indexes start with them.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="tool_calls", db_index=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_calls", db_index=False)
    call_id = models.TextField()
    index = models.PositiveIntegerField(default=0)
    type = models.CharField(max_length=32, default="function")
    name = models.CharField(max_length=255, blank=True)
    arguments = models.TextField(blank=True)  # exactly as sent
    parsed_arguments = models.JSONField(null=True, blank=True)
    arguments_error = models.TextField(blank=True)
    result_message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="answered_calls"
    )
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["message_id", "index"]
        constraints = [
            models.UniqueConstraint(F("conversation"), MD5("call_id"), name="toolcall_unique_conversation_call_id_md5"),
        ]
        indexes = [
            # ?tool_name=airalogy_search: which conversations called a tool.
            models.Index(fields=["name", "conversation"], name="toolcall_name_idx"),
            # Tool calls of the messages on a thread page: WHERE message_id IN (...).
            models.Index(fields=["message", "index"], name="toolcall_message_idx"),
            # ?has_warnings=unanswered_call: the conversations with a call no tool message answers.
            models.Index(
                fields=["conversation"], condition=Q(result_message__isnull=True), name="toolcall_unanswered_idx"
            ),
            # ?has_warnings=invalid_arguments: the conversations with a call whose arguments are not valid JSON.
            models.Index(fields=["conversation"], condition=~Q(arguments_error=""), name="toolcall_bad_arguments_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name}({self.call_id})"

    @property
    def is_answered(self) -> bool:
        return self.result_message_id is not None

    @property
    def has_valid_arguments(self) -> bool:
        return not self.arguments_error


class ArtifactKind(models.TextChoices):
    PROTOCOL = "protocol"
    RECORD = "record"
    DISCUSSION = "discussion"
    FILE = "file"
    OTHER = "other"


class Verdict(models.TextChoices):
    """An injected artifact against the conversation's injection context (chats.ingest.policy)."""

    PERMITTED = policy.PERMITTED, "Permitted"
    KIND_NOT_ENABLED = policy.KIND_NOT_ENABLED, "Kind not enabled"
    NOT_LISTED = policy.NOT_LISTED, "Not listed"


class ContextIdState(models.TextChoices):
    """What became of an id the injection context lists (chats.ingest.policy)."""

    USED = policy.USED, "Injected and resolved"
    REQUESTED_UNRESOLVED = policy.REQUESTED_UNRESOLVED, "Requested but not resolved"
    UNUSED = policy.UNUSED, "Unused"


class InjectedArtifact(models.Model):
    # No index of its own: the unique (conversation, call, artifact id) index starts with it.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="artifacts", db_index=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="artifacts")
    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=16, choices=ArtifactKind.choices)
    artifact_id = models.TextField()  # as given, never cut short
    id_well_formed = models.BooleanField(default=True)
    tool_name = models.CharField(max_length=255)
    requested = models.BooleanField(default=False)
    resolved = models.BooleanField(default=False)
    payload = models.JSONField(null=True, blank=True)
    # Against the injection context (chats.ingest.policy), decided again when a resend changes the context. NULL
    # when the conversation has no context: not judged, which no verdict (nor "") may stand for.
    verdict = models.CharField(max_length=20, choices=Verdict.choices, null=True, blank=True)  # noqa: DJ001

    class Meta:
        constraints = [
            models.UniqueConstraint(
                F("conversation"), F("tool_call"), MD5("artifact_id"), name="artifact_unique_conversation_call_id_md5"
            ),
            choices_check("artifact_kind_valid", "kind", ArtifactKind),
            choices_check("artifact_verdict_valid", "verdict", Verdict, null=True),
            models.CheckConstraint(
                condition=Q(requested=True) | Q(resolved=True), name="artifact_requested_or_resolved"
            ),
        ]
        indexes = [
            # ?artifact_id=airalogy.id.record...: where was this artifact injected. On PostgreSQL a hash index
            # (migration 0006), which holds ids of any length.
            # ?artifact_kind=protocol.
            models.Index(fields=["kind", "conversation"], name="artifact_kind_idx"),
            # ?has_warnings=malformed_artifact_id: the conversations that injected an id not following its scheme.
            models.Index(fields=["conversation"], condition=Q(id_well_formed=False), name="artifact_malformed_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.artifact_id}"

    @property
    def state(self) -> str:
        if self.requested and self.resolved:
            return "requested and resolved"
        return "resolved" if self.resolved else "requested, not resolved"


class ContextArtifactId(models.Model):
    """An artifact id a conversation's injection context lists (what may be injected), and what became of it.

    Rewritten whole, with the verdicts, whenever an ingestion changes the context or the injections.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="context_ids")
    kind = models.CharField(max_length=16, choices=ArtifactKind.choices)
    artifact_id = models.TextField()  # as listed, never cut short
    id_well_formed = models.BooleanField(default=True)
    state = models.CharField(max_length=20, choices=ContextIdState.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                F("conversation"), F("kind"), MD5("artifact_id"), name="contextid_unique_conversation_kind_id_md5"
            ),
            choices_check("contextid_kind_valid", "kind", ArtifactKind),
            choices_check("contextid_state_valid", "state", ContextIdState),
        ]
        # ?artifact_id=...: which conversations list this id. On PostgreSQL a hash index (migration 0009), which
        # holds ids of any length. A conversation's listed ids: the unique constraint's index.
        indexes = [
            # ?has_warnings=malformed_artifact_id: the conversations whose context lists an id off its scheme.
            models.Index(fields=["conversation"], condition=Q(id_well_formed=False), name="contextid_malformed_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.artifact_id}"
