"""Output serializers (and the documented shapes of the ingestion results and errors), the input serializers of
the feedback writes, and the query parameters of the read endpoints."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils.urls import replace_query_param

from chats.export import FORMATS
from chats.models import (
    ArtifactKind,
    ContextIdState,
    Conversation,
    ExportJob,
    Feedback,
    FeedbackOrigin,
    IngestionReceipt,
    JobState,
    Label,
    Outcome,
    Verdict,
)
from chats.selectors.artifacts import ARTIFACT_SORTS, DEFAULT_ARTIFACT_SORT, MAX_ARTIFACT_PAGE
from chats.selectors.exports import BULK_EXPORT_FORMATS, TRAINING
from chats.selectors.threads import WINDOW_LIMIT_MAX, WINDOW_SIZE, PathWindow


class WrapperSerializer(serializers.Serializer[Any]):
    # Serializes a selector's dataclass that wraps a model instance (the attribute `wraps` names): every field but
    # `own_fields` is read from that instance, so a model's fields are declared once, for both shapes. The fields
    # read the model directly (not through a dotted source): a thread's thousands of messages pay no extra lookup.
    # A comment, not a docstring: the schema would describe every subclass with it.

    wraps: ClassVar[str] = ""
    own_fields: ClassVar[frozenset[str]] = frozenset()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        wrapped = getattr(instance, self.wraps)
        data: dict[str, Any] = {}
        for field in self._readable_fields:
            name = str(field.field_name)
            attribute = field.get_attribute(instance if name in self.own_fields else wrapped)
            data[name] = None if attribute is None else field.to_representation(attribute)
        return data


class IssueSerializer(serializers.Serializer[Any]):
    path = serializers.CharField(help_text="A JSON pointer into the document ('' for the whole document).")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer[Any]):
    errors = IssueSerializer(many=True)  # type: ignore[assignment]  # a field named like Serializer.errors


class IngestResultSerializer(serializers.Serializer[Any]):
    conversation = serializers.UUIDField(allow_null=True)
    external_id = serializers.CharField()
    outcome = serializers.ChoiceField(choices=Outcome.choices)
    format = serializers.CharField()
    receipt = serializers.UUIDField()
    warnings = IssueSerializer(many=True)
    errors = IssueSerializer(many=True, required=False)  # type: ignore[assignment]


class BulkItemSerializer(IngestResultSerializer):
    index = serializers.IntegerField()
    # An NDJSON line that is not JSON is rejected before it is a document: no id and no format (its receipt keeps
    # the line).
    external_id = serializers.CharField(allow_null=True)
    format = serializers.CharField(required=False)


class BulkResultSerializer(serializers.Serializer[Any]):
    results = BulkItemSerializer(many=True)
    summary = serializers.DictField(child=serializers.IntegerField())


class BulkQueuedItemSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    conversation = serializers.UUIDField(allow_null=True, help_text="null until a worker has stored the document.")
    external_id = serializers.CharField(allow_null=True, help_text="null until a worker has parsed the document.")
    outcome = serializers.CharField(
        help_text="queued: stored, for a worker to apply; rejected: a line of NDJSON that is not JSON."
    )
    receipt = serializers.UUIDField()
    receipt_url = serializers.CharField(
        required=False, help_text="GET it for the outcome once a worker has applied the document."
    )
    warnings = IssueSerializer(many=True)
    errors = IssueSerializer(many=True, required=False)  # type: ignore[assignment]


class BulkQueuedSerializer(serializers.Serializer[Any]):
    results = BulkQueuedItemSerializer(many=True)
    summary = serializers.DictField(child=serializers.IntegerField())


class ReceiptSerializer(serializers.ModelSerializer[Any]):
    conversation: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="uuid",
        read_only=True,
        allow_null=True,
        help_text="The conversation stored; null while queued, for a rejected document, and once it is deleted.",
    )
    format = serializers.CharField(source="input_format")
    payload = serializers.SerializerMethodField(
        help_text="The document as sent, when the body was JSON; null when it was not, and once the payload is pruned."
    )
    payload_text = serializers.SerializerMethodField(
        help_text="The body as text when it was not JSON, bytes that are not UTF-8 (and NUL) as \\xNN escapes; null "
        "otherwise. The exact bytes: GET /api/v1/receipts/{uuid}/payload/."
    )
    payload_pruned = serializers.BooleanField(
        read_only=True, help_text="Retention removed the payload; the hash and size stay."
    )

    class Meta:
        model = IngestionReceipt
        fields = [
            "uuid",
            "conversation",
            "external_id",
            "format",
            "outcome",
            "payload_sha256",
            "size_bytes",
            "messages_added",
            "warnings",
            "errors",
            "created_at",
            "payload",
            "payload_text",
            "payload_pruned",
        ]

    @extend_schema_field({"description": "Any JSON value.", "nullable": True})
    def get_payload(self, receipt: IngestionReceipt) -> Any:
        shown = receipt.payload.shown if receipt.payload is not None else None
        return shown.document if shown is not None and shown.is_json else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_payload_text(self, receipt: IngestionReceipt) -> str | None:
        shown = receipt.payload.shown if receipt.payload is not None else None
        return shown.text if shown is not None and not shown.is_json else None


# --------------------------------------------------------------------------------------------------------------
# Reading conversations


class FeedbackSummarySerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField(source="feedback_count", help_text="Feedback entries of every origin.")
    score_up = serializers.IntegerField(help_text="Entries scoring +1.")
    score_down = serializers.IntegerField(help_text="Entries scoring -1.")


class ConversationListSerializer(serializers.ModelSerializer[Any]):
    source = serializers.CharField(source="source.name", help_text="The source's name.")  # type: ignore[assignment]
    format = serializers.CharField(source="input_format", help_text="The format the conversation arrived in.")
    user = serializers.CharField(source="user_external_id", help_text="The external user id.")
    model = serializers.CharField(source="model_name", help_text="The model's name.")
    display_title = serializers.CharField(help_text="The title, else the first user message, else the id.")
    feedback_summary = FeedbackSummarySerializer(source="*")
    policy_violation = serializers.BooleanField(
        allow_null=True,
        help_text="Whether any injected artifact was not permitted by the Record QA injection context (an artifact "
        "verdict other than permitted); null when the conversation has no context, so nothing was stated and "
        "nothing is judged.",
    )

    class Meta:
        model = Conversation
        fields = [
            "uuid",
            "source",
            "external_id",
            "external_id_generated",
            "format",
            "title",
            "display_title",
            "user",
            "model",
            "started_at",
            "ended_at",
            "last_activity_at",
            "review_status",
            "message_count",
            "tool_call_count",
            "artifact_count",
            "branch_count",
            "feedback_summary",
            "policy_violation",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ToolCallSerializer(WrapperSerializer):
    wraps, own_fields = "call", frozenset({"result_message_key"})

    call_id = serializers.CharField()
    index = serializers.IntegerField(help_text="Position among the message's calls.")
    type = serializers.CharField(help_text="function, custom, function_call (legacy), or as given.")
    name = serializers.CharField(allow_blank=True)
    arguments = serializers.CharField(allow_blank=True, help_text="Exactly as sent.")
    parsed_arguments = serializers.JSONField(allow_null=True, help_text="The arguments decoded, when valid JSON.")
    arguments_error = serializers.CharField(allow_blank=True, help_text="Why the arguments are not valid JSON.")
    result_message_key = serializers.CharField(
        allow_null=True, help_text="The tool message answering this call (by tool_call_id), or null if unanswered."
    )
    extra = serializers.JSONField(help_text="Unknown keys of the call, verbatim.")


class MessageSerializer(WrapperSerializer):
    wraps, own_fields = "message", frozenset({"parent_key", "tool_calls", "model_call"})

    key = serializers.CharField(help_text="The message's identity in the conversation (the input's id or a hash).")
    parent_key = serializers.CharField(allow_null=True)
    position = serializers.IntegerField(help_text="Order of arrival, 0-based.")
    depth = serializers.IntegerField()
    on_active_path = serializers.BooleanField()
    role = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    section = serializers.CharField(help_text="main, or scenario for messages given before the main ones.")
    content_form = serializers.CharField(help_text="string, parts or null: the shape content arrived in.")
    parts = serializers.ListField(child=serializers.DictField(), help_text="Content parts, each with a type.")
    text = serializers.CharField(allow_blank=True)
    reasoning = serializers.CharField(allow_blank=True)
    context_pairs = serializers.ListField(child=serializers.ListField(child=serializers.CharField(allow_blank=True)))
    author_metadata = serializers.JSONField()
    sent_at = serializers.DateTimeField(allow_null=True)
    tool_call_id = serializers.CharField(allow_blank=True, help_text="For a tool message: the call it answers.")
    is_orphan_result = serializers.BooleanField(help_text="A tool result whose id matches no call.")
    hidden = serializers.BooleanField()
    recipient = serializers.CharField(allow_blank=True)
    extra = serializers.JSONField(help_text="Unknown keys of the message, verbatim.")
    tool_calls = ToolCallSerializer(many=True)
    model_call = serializers.JSONField(
        allow_null=True,
        help_text="The model call this message is the output of (OpenTelemetry ingestion): trace_id, span_id, "
        "trace_url (MASTERBRAIN_TRACE_URL_TEMPLATE), provider, model, latency_ms, input_tokens, output_tokens, "
        "finish_reasons; null for other messages.",
    )


class ArtifactSerializer(WrapperSerializer):
    wraps, own_fields = "artifact", frozenset({"verdict"})

    kind = serializers.CharField()
    artifact_id = serializers.CharField()
    id_well_formed = serializers.BooleanField()
    tool_name = serializers.CharField()
    tool_call_id = serializers.CharField(help_text="The injecting call's call_id.")
    message_key = serializers.CharField(help_text="The assistant message holding that call.")
    requested = serializers.BooleanField(help_text="Named in the call's arguments.")
    resolved = serializers.BooleanField(help_text="Present in the answering tool message.")
    payload = serializers.JSONField(allow_null=True, help_text="The resolved item, verbatim.")
    verdict = serializers.ChoiceField(
        choices=Verdict.values,
        allow_null=True,
        help_text="Against the conversation's injection context: permitted (its kind is enabled and its id is "
        "listed, or the kind lists no id), kind_not_enabled (injected although the kind's enabled is not true, or "
        "the context does not name the kind) or not_listed (the kind lists ids, not this one). Null when the "
        "conversation has no context. Decided again when a resend changes the context.",
    )


class ContextIdSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ArtifactKind.values, help_text="The kind whose list names the id.")
    artifact_id = serializers.CharField(help_text="As listed.")
    id_well_formed = serializers.BooleanField(help_text="False when the id does not follow its kind's id scheme.")
    state = serializers.ChoiceField(
        choices=ContextIdState.values,
        help_text="used (injected and resolved), requested_unresolved (requested by an injection, never resolved) "
        "or unused.",
    )


class FeedbackSerializer(serializers.Serializer[Any]):
    uuid = serializers.UUIDField()
    conversation = serializers.UUIDField(source="conversation.uuid")
    message = serializers.CharField(
        source="message.key", allow_null=True, help_text="The message's key, or null for the whole conversation."
    )
    origin = serializers.ChoiceField(choices=FeedbackOrigin.values)
    author = serializers.CharField(source="author.username", allow_null=True, help_text="Null for imported feedback.")
    score = serializers.IntegerField(allow_null=True, min_value=-1, max_value=1)
    labels = serializers.SerializerMethodField(help_text="Label names.")
    comment = serializers.CharField(allow_blank=True)
    correction = serializers.CharField(allow_blank=True, help_text="A corrected assistant answer.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_labels(self, feedback: Feedback) -> list[str]:
        return [label.name for label in feedback.labels.all()]


class ThreadWindowSerializer(serializers.Serializer[Any]):
    start = serializers.IntegerField(help_text="The position of the window's first message (0-based).")
    end = serializers.IntegerField(help_text="The position after its last message.")
    total = serializers.IntegerField(help_text="How many messages the whole active path holds.")
    next_after = serializers.IntegerField(
        allow_null=True, help_text="The `after` of the next window; null at the end of the path."
    )
    next = serializers.SerializerMethodField(help_text="The URL of the next window; null at the end of the path.")

    def get_next(self, window: PathWindow) -> str | None:
        request = self.context.get("request")
        if window.next_after is None or request is None:
            return None
        url = replace_query_param(request.build_absolute_uri(), "after", window.next_after)
        return str(url)


class ConversationDetailSerializer(WrapperSerializer, ConversationListSerializer):
    wraps, own_fields = (
        "conversation",
        frozenset({"branch", "messages", "artifacts", "feedback", "context_ids", "window"}),
    )

    model_config = serializers.JSONField(allow_null=True, help_text="The model as given (a string or an object).")
    branch = serializers.ChoiceField(choices=["active", "all"], help_text="Which messages are listed.")
    messages = MessageSerializer(many=True)
    artifacts = ArtifactSerializer(many=True)
    feedback = FeedbackSerializer(many=True)
    context_ids = ContextIdSerializer(
        many=True,
        help_text="Every artifact id the Record QA injection context lists (whatever the branch), with what became "
        "of it; empty when there is no context.",
    )
    window = ThreadWindowSerializer(
        required=False,
        help_text="Only with `?after=` or `?limit=`: which part of the active path is listed, and how to read on.",
    )

    class Meta(ConversationListSerializer.Meta):
        fields = [
            *ConversationListSerializer.Meta.fields,
            "model_config",
            "scenario",
            "injection_context",
            "context_pairs",
            "metadata",
            "active_leaf_key",
            "branch",
            "messages",
            "artifacts",
            "context_ids",
            "feedback",
            "window",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        if data.get("window") is None:  # the whole thread, as before windows existed
            data.pop("window", None)
        return data


class LabelSerializer(serializers.ModelSerializer[Any]):
    class Meta:
        model = Label
        fields = ["name", "description"]
        read_only_fields = fields


class InjectionSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField()
    tool_name = serializers.CharField()
    tool_call_id = serializers.CharField()
    message_key = serializers.CharField()
    requested = serializers.BooleanField()
    resolved = serializers.BooleanField()


class ArtifactUseSerializer(WrapperSerializer, ConversationListSerializer):
    wraps, own_fields = "conversation", frozenset({"injections", "labels"})

    injections = InjectionSerializer(many=True)
    labels = serializers.DictField(
        child=serializers.IntegerField(), source="label_counts", help_text="Feedback label name -> count."
    )

    class Meta(ConversationListSerializer.Meta):
        fields = [*ConversationListSerializer.Meta.fields, "injections", "labels"]
        read_only_fields = fields


class ScoreCountsSerializer(serializers.Serializer[Any]):
    up = serializers.IntegerField(help_text="Feedback scoring +1.")
    neutral = serializers.IntegerField(help_text="Feedback scoring 0.")
    down = serializers.IntegerField(help_text="Feedback scoring -1.")


class ArtifactSummarySerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ArtifactKind.values)
    artifact_id = serializers.CharField(help_text="As injected or listed, never cut short.")
    injected_conversations = serializers.IntegerField(help_text="Conversations it was injected into.")
    permitted_only = serializers.IntegerField(
        help_text="Conversations whose injection context lists it (kind and id) but that did not inject it."
    )
    violations = serializers.IntegerField(
        help_text="Injections whose policy verdict is not permitted (kind_not_enabled, not_listed)."
    )
    first_injected_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the model was first given it, in the conversations' own times (a message's time, else the "
        "conversation's start). Null when only ever listed, or when no input gave a time.",
    )
    last_injected_at = serializers.DateTimeField(allow_null=True, help_text="The latest such time.")
    last_received_at = serializers.DateTimeField(
        allow_null=True, help_text="When its newest injection was received. Null when only ever listed."
    )
    scores = ScoreCountsSerializer(help_text="The feedback scores on the conversations that injected it.")
    labels = serializers.DictField(
        child=serializers.IntegerField(), help_text="Feedback label name -> count, on those conversations."
    )


class ArtifactListSerializer(serializers.Serializer[Any]):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ArtifactSummarySerializer(many=True)


class VersionConversationSerializer(serializers.Serializer[Any]):
    uuid = serializers.UUIDField()
    title = serializers.CharField(help_text="The title, else the first user message, else the external id.")
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.source
    verdict = serializers.ChoiceField(choices=Verdict.values, allow_null=True)


class PayloadVersionSerializer(serializers.Serializer[Any]):
    digest = serializers.CharField(
        allow_blank=True,
        help_text="sha256 of the payload's canonical JSON (sorted keys, no spaces): equal payloads, equal digests. "
        "Empty for injections that were requested but never resolved (no payload).",
    )
    payload = serializers.JSONField(allow_null=True)
    conversation_count = serializers.IntegerField()
    injection_count = serializers.IntegerField()
    first_injected_at = serializers.DateTimeField(allow_null=True)
    last_injected_at = serializers.DateTimeField(allow_null=True)
    conversations = VersionConversationSerializer(
        many=True, help_text="The newest conversations that got this version (at most 20; the count says how many)."
    )


class ArtifactDetailSerializer(serializers.Serializer[Any]):
    artifact_id = serializers.CharField()
    kinds = ArtifactSummarySerializer(many=True, help_text="The figures, one per kind the id was seen as.")
    versions = PayloadVersionSerializer(many=True, help_text="The distinct payloads, oldest first (at most 50).")
    next = serializers.URLField(allow_null=True, help_text="The next page of `results`.")
    previous = serializers.URLField(allow_null=True)
    results = ArtifactUseSerializer(
        many=True, help_text="The conversations that injected it, newest first, a page at a time."
    )


# --------------------------------------------------------------------------------------------------------------
# Writing feedback (input serializers: they check types; the service checks the rules)


class FeedbackCreateSerializer(serializers.Serializer[Any]):
    conversation = serializers.UUIDField(help_text="The conversation's uuid.")
    message = serializers.CharField(
        required=False, allow_null=True, default=None, help_text="A message key; omit or null for the conversation."
    )
    score = serializers.ChoiceField(choices=[-1, 0, 1], required=False, allow_null=True, default=None)
    labels = serializers.ListField(
        child=serializers.CharField(), required=False, default=list, help_text="Label names from /api/v1/labels/."
    )
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    correction = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="A corrected answer (assistant messages only)."
    )


class FeedbackUpdateSerializer(serializers.Serializer[Any]):
    score = serializers.ChoiceField(choices=[-1, 0, 1], required=False, allow_null=True)
    labels = serializers.ListField(child=serializers.CharField(), required=False)
    comment = serializers.CharField(required=False, allow_blank=True)
    correction = serializers.CharField(required=False, allow_blank=True)


# --------------------------------------------------------------------------------------------------------------
# Query parameters (each error names its parameter: /name). The schema documents them from these serializers.


class BranchQuery(serializers.Serializer[Any]):
    branch = serializers.ChoiceField(
        choices=["active", "all"], default="active", help_text="active (default): the active path; all: the tree."
    )
    after = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        help_text="A window of the active path: the messages after this position (0-based along the path), as "
        "`window.next_after` gives it. Without `after` nor `limit`, the whole path.",
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=WINDOW_LIMIT_MAX,
        help_text=f"A window of the active path of at most this many messages (1 to {WINDOW_LIMIT_MAX}; "
        f"{WINDOW_SIZE} when only `after` is given).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["branch"] == "all" and ("after" in attrs or "limit" in attrs):
            raise serializers.ValidationError({"branch": ["Windows (after, limit) are along the active path only."]})
        return attrs


class ConversationExportQuery(serializers.Serializer[Any]):
    format = serializers.ChoiceField(choices=sorted(FORMATS), help_text="The format to export in (see formats.md).")


class ArtifactQuery(serializers.Serializer[Any]):
    artifact_id = serializers.CharField(help_text="The artifact id exactly as injected.")


class ArtifactExportQuery(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ArtifactKind.values, required=False, help_text="Only this kind.")
    source = serializers.CharField(  # type: ignore[assignment]  # a field named like Field.source
        required=False, help_text="Only the conversations of this source (its name)."
    )


class ArtifactListQuery(ArtifactExportQuery):
    sort = serializers.ChoiceField(
        choices=list(ARTIFACT_SORTS), default=DEFAULT_ARTIFACT_SORT, help_text="The order of the list."
    )
    page = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ARTIFACT_PAGE)
    artifact_id = serializers.CharField(
        required=False,
        help_text="Deprecated: answered by a redirect (308) to /api/v1/artifacts/{artifact_id}/, whose `results` "
        "are the conversations this parameter used to list here.",
    )


class BulkExportQuery(serializers.Serializer[Any]):
    format = serializers.ChoiceField(
        choices=sorted([*FORMATS, TRAINING]), help_text="A conversation format, or training."
    )
    envelope = serializers.BooleanField(
        default=False, help_text="Wrap each document with its uuid, omissions and injection policy verdicts."
    )


class ExportJobCreateSerializer(serializers.Serializer[Any]):
    """What an export job is asked with (documentation: `chats.services.export_jobs` checks it)."""

    format = serializers.ChoiceField(choices=list(BULK_EXPORT_FORMATS), help_text="A conversation format, or training.")
    envelope = serializers.BooleanField(default=False, help_text="As the synchronous export's `envelope`.")
    filters = serializers.DictField(
        required=False,
        help_text="The export's query parameters (the conversation list's filters, `input_format` for the format "
        "a conversation arrived in), by name: a string, or a list of strings.",
    )


class ExportJobProgressSerializer(serializers.Serializer[Any]):
    done = serializers.IntegerField(help_text="Conversations exported so far.")
    total = serializers.IntegerField(allow_null=True, help_text="Conversations to export; null until counted.")


class ExportJobSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField(source="uuid")
    url = serializers.CharField(source="get_absolute_url")
    format = serializers.CharField()
    envelope = serializers.BooleanField()
    filters = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    state = serializers.CharField(help_text="queued, running, done or failed.")
    progress = serializers.SerializerMethodField()
    size = serializers.IntegerField(help_text="Bytes of the result so far.")
    error = serializers.CharField(help_text="Why the job failed (empty otherwise).")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    download_url = serializers.SerializerMethodField(help_text="Once done: where to download the result.")

    @extend_schema_field(ExportJobProgressSerializer)
    def get_progress(self, job: ExportJob) -> dict[str, Any]:
        return {"done": job.done, "total": job.total}

    def get_download_url(self, job: ExportJob) -> str | None:
        return job.download_url if job.state == JobState.DONE else None
