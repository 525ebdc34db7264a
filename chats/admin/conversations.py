"""Ingested data, read-only: conversations (with their thread), messages, tool calls, injected artifacts (with
their policy verdicts) and the ids injection contexts list. They change only through ingestion and the services
(receipts: see ``receipts``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string

if TYPE_CHECKING:
    from django.contrib.admin.filters import _ListFilterChoices
    from django.contrib.admin.views.main import ChangeList

from chats.admin.base import ReadOnlyAdmin, YesNoFilter
from chats.models import ContextArtifactId, Conversation, InjectedArtifact, Message, ModelCall, ToolCall

# A conversation can hold thousands of messages; its admin page shows the first ones and says so.
THREAD_TABLE_LIMIT = 500


class HasToolCallsFilter(YesNoFilter):
    title = "has tool calls"
    parameter_name = "has_tool_calls"
    condition = Q(tool_call_count__gt=0)


class NamedValuesFilter(admin.AllValuesFieldListFilter):
    """Every value of a field, as the admin lists them, with the empty one named: a link needs words to be read."""

    empty_label = "(none given)"

    def choices(self, changelist: ChangeList) -> Iterator[_ListFilterChoices]:
        for choice in super().choices(changelist):
            if choice["display"] == "":
                choice["display"] = self.empty_label
            yield choice


class AnsweredFilter(YesNoFilter):
    title = parameter_name = "answered"
    condition = Q(result_message__isnull=False)
    yes_label, no_label = "Answered", "Not answered"


class ArgumentsErrorFilter(YesNoFilter):
    title = "arguments are JSON"
    parameter_name = "arguments_json"
    condition = Q(arguments_error="")
    yes_label, no_label = "Valid JSON or empty", "Not JSON"


@dataclass(frozen=True)
class ThreadRow:
    """One message of the thread table, with what is worth noting about its place in the thread."""

    message: Message
    notes: list[str]

    @classmethod
    def of(cls, message: Message) -> ThreadRow:
        notes = []
        if message.tool_call_id:
            notes.append(f"answers {message.tool_call_id}")
        if message.is_orphan_result:
            notes.append("answers no call")
        if not message.on_active_path:
            notes.append("off the active path")
        if message.hidden:
            notes.append("hidden")
        return cls(message=message, notes=notes)


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = [
        "external_id",
        "display_title",
        "source",
        "model_name",
        "input_format",
        "review_status",
        "message_count",
        "tool_call_count",
        "created_at",
    ]
    list_select_related = ["source"]
    list_filter = [
        "source",
        ("model_name", NamedValuesFilter),
        "input_format",
        "review_status",
        HasToolCallsFilter,
        "policy_violation",
        "last_activity_at",
    ]
    search_fields = ["external_id", "user_external_id", "title"]
    ordering = ["-last_activity_at", "-id"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "uuid",
                    "source",
                    "external_id",
                    "external_id_generated",
                    "input_format",
                    "title",
                    "user_external_id",
                    "model_name",
                    "review_status",
                ]
            },
        ),
        (
            "Summary",
            {
                "fields": [
                    "message_count",
                    "tool_call_count",
                    "artifact_count",
                    "branch_count",
                    "feedback_count",
                    "score_up",
                    "score_down",
                    "policy_violation",
                    "active_leaf_key",
                ]
            },
        ),
        ("Thread", {"fields": ["thread"]}),
        (
            "Context and metadata",
            {
                "classes": ["collapse"],
                "fields": [
                    "model_config",
                    "started_at",
                    "ended_at",
                    "scenario",
                    "injection_context",
                    "context_pairs",
                    "metadata",
                ],
            },
        ),
        ("Times", {"fields": ["created_at", "updated_at", "last_activity_at"]}),
    ]
    readonly_fields = ["thread"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).select_related("source").defer("title_vector")

    @admin.display(description="title", ordering="title")
    def display_title(self, obj: Conversation) -> str:
        return obj.display_title

    @admin.display(description="messages, in order of arrival")
    def thread(self, obj: Conversation) -> str:
        """Every message with its tool calls and injections: three queries, however long the thread."""
        messages = (
            obj.messages.order_by("position")
            .only(
                "id",
                "conversation_id",
                "position",
                "depth",
                "role",
                "name",
                "text",
                "tool_call_id",
                "is_orphan_result",
                "on_active_path",
                "hidden",
            )
            .prefetch_related("tool_calls", "artifacts")[:THREAD_TABLE_LIMIT]
        )
        rows = [ThreadRow.of(message) for message in messages]
        return render_to_string("admin/chats/conversation/_thread.html", {"conversation": obj, "rows": rows})


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdmin):
    """A model call an instrumented application reported (an OpenTelemetry span): read-only, as ingested."""

    list_display = ["id", "conversation", "provider", "response_model", "latency_ms", "input_tokens", "output_tokens"]
    list_select_related = ["conversation"]
    list_filter = ["form", "provider"]
    search_fields = ["=trace_id", "=span_id"]
    raw_id_fields = ["conversation", "message"]
    show_full_result_count = False


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "conversation", "position", "depth", "role", "excerpt", "on_active_path"]
    list_select_related = ["conversation"]
    list_filter = ["section", "content_form", "on_active_path", "is_orphan_result", "hidden"]
    search_fields = ["=key", "=tool_call_id", "=conversation__external_id"]
    raw_id_fields = ["conversation", "parent"]
    readonly_fields = ["excerpt"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return super().get_queryset(request).select_related("conversation", "parent")

    @admin.display(description="text")
    def excerpt(self, obj: Message) -> str:
        return obj.excerpt


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ["call_id", "name", "type", "conversation", "message", "answered", "arguments_valid"]
    list_select_related = ["conversation", "message"]
    list_filter = [AnsweredFilter, ArgumentsErrorFilter]
    search_fields = ["=call_id", "^name", "=conversation__external_id"]
    raw_id_fields = ["conversation", "message", "result_message"]
    ordering = ["-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolCall]:
        return super().get_queryset(request).select_related("conversation", "message", "result_message")

    @admin.display(description="answered", boolean=True)
    def answered(self, obj: ToolCall) -> bool:
        return obj.is_answered

    @admin.display(description="arguments valid", boolean=True)
    def arguments_valid(self, obj: ToolCall) -> bool:
        return obj.has_valid_arguments


@admin.register(InjectedArtifact)
class InjectedArtifactAdmin(ReadOnlyAdmin):
    list_display = [
        "kind",
        "artifact_id",
        "id_well_formed",
        "requested",
        "resolved",
        "verdict",
        "tool_name",
        "conversation",
    ]
    list_select_related = ["conversation"]
    list_filter = ["kind", "id_well_formed", "requested", "resolved", "verdict"]
    search_fields = ["^artifact_id", "=conversation__external_id"]
    raw_id_fields = ["conversation", "message", "tool_call"]
    ordering = ["-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[InjectedArtifact]:
        return super().get_queryset(request).select_related("conversation", "message", "tool_call")


@admin.register(ContextArtifactId)
class ContextArtifactIdAdmin(ReadOnlyAdmin):
    list_display = ["kind", "artifact_id", "id_well_formed", "state", "conversation"]
    list_select_related = ["conversation"]
    list_filter = ["kind", "id_well_formed", "state"]
    search_fields = ["^artifact_id", "=conversation__external_id"]
    raw_id_fields = ["conversation"]
    ordering = ["-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ContextArtifactId]:
        return super().get_queryset(request).select_related("conversation")
