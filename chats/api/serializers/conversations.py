"""Conversations on the API: the list's rows, a conversation with its thread (messages, tool calls, injected
artifacts, context ids, a window of the active path), and the query parameters of a branch and of a conversation's
export."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.utils.urls import replace_query_param

from chats.api.serializers.common import WrapperSerializer
from chats.api.serializers.feedback import FeedbackSerializer
from chats.export import FORMATS
from chats.models import ArtifactKind, ContextIdState, Conversation, Verdict
from chats.selectors.threads import WINDOW_LIMIT_MAX, WINDOW_SIZE, PathWindow


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

    def to_representation(self, instance: object) -> dict[str, Any]:
        data = super().to_representation(instance)
        if data.get("window") is None:  # the whole thread, as before windows existed
            data.pop("window", None)
        return data


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
