"""The admin audit UI: sources and keys, labels, and a read-only view of everything ingested and audited.

Ingested data (conversations, messages, tool calls, injected artifacts, receipts) and the audit log are read-only
here: they change only through ingestion and the services. Writes with side effects (a source, a key, revoking
a key, a label, changing or deleting feedback) go through ``chats.services`` so that they are audited like any
other; every other add, change and delete (users and their roles, groups, deleting a source) is audited by
``AuditedModelAdmin``, and so is a password changed here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.forms import AdminPasswordChangeForm
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from chats import services
from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    Feedback,
    FeedbackLabel,
    IngestionReceipt,
    InjectedArtifact,
    Label,
    Message,
    Source,
    ToolCall,
)

# A conversation can hold thousands of messages; its admin page shows the first ones and says so.
THREAD_TABLE_LIMIT = 500

BIG_TABLE_PAGE_SIZE = 50


class ReadOnlyAdmin(admin.ModelAdmin):
    """View only, for everyone (superusers included): the rows are written by ingestion or the services."""

    show_full_result_count = False
    list_per_page = BIG_TABLE_PAGE_SIZE

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AuditedModelAdmin(admin.ModelAdmin):
    """Every add, change and delete made here writes an audit event: the whole row when it is added or deleted
    (with the rows the deletion takes along), and the fields that changed, before and after, when it is changed,
    many-to-many sets included (a user's groups, a group's permissions); a password only as changed.

    An admin whose writes are business actions overrides save_model/delete_model to call the service, which
    audits them; this class then records nothing more for them.
    """

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # The stored row, before the form's values reach it; the event is written once the many-to-many sets are
        # saved too (save_related), in the admin's transaction.
        before = services.audit_snapshot(type(obj)._default_manager.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)
        request._audit_pending = (obj, before)  # type: ignore[attr-defined]

    def save_related(self, request: HttpRequest, form: ModelForm[Any], formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        pending = request.__dict__.pop("_audit_pending", None)
        if pending is not None and pending[0] is form.instance:
            services.audit_record_saved(actor=request.user, obj=form.instance, before=pending[1])

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            before = services.audit_snapshot(obj, deleting=True)
            super().delete_model(request, obj)
            services.audit_record_deleted(actor=request.user, model=type(obj), before=before)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            befores = [services.audit_snapshot(obj, deleting=True) for obj in queryset]
            super().delete_queryset(request, queryset)
            for before in befores:
                services.audit_record_deleted(actor=request.user, model=queryset.model, before=before)


# --------------------------------------------------------------------------------------------------------------
# Sources and keys


class CreateApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="What the key is for, e.g. the host using it.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, help_text="Leave empty for a key that does not expire."
    )

    def expires_at(self) -> datetime | None:
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=days) if days else None


@admin.register(Source)
class SourceAdmin(AuditedModelAdmin):
    list_display = ["name", "is_active", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name"]
    fields = ["name", "description", "is_active", "created_at", "api_keys"]
    readonly_fields = ["created_at", "api_keys"]

    def get_urls(self) -> list[URLPattern]:
        create_key = path(
            "<int:object_id>/create-key/",
            self.admin_site.admin_view(self.create_key_view),
            name="chats_source_create_key",
        )
        return [create_key, *super().get_urls()]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A source is known by its name (create_source, the audit trail's "source:<name>"): set once.
        return [*self.readonly_fields, "name"] if obj is not None else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: Source, form: Any, change: bool) -> None:
        # Sources are written by the services, which audit every change (a deletion is audited by the base class).
        with transaction.atomic():
            if change:
                stored = Source.objects.select_for_update().get(pk=obj.pk)
            else:
                stored, created = services.source_get_or_create(
                    name=obj.name, description=obj.description, is_active=obj.is_active, actor=request.user
                )
                obj.pk, obj.created_at = stored.pk, stored.created_at
                if created:
                    return
            services.source_update(
                source=stored, description=obj.description, is_active=obj.is_active, actor=request.user
            )

    @admin.display(description="API keys")
    def api_keys(self, obj: Source) -> str:
        if obj.pk is None:
            return "-"
        keys = list(obj.api_keys.order_by("-created_at"))
        if not keys:
            return "No keys yet."
        rows = format_html_join(
            "",
            "<tr><td><a href='{}'>{}…</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    reverse("admin:chats_apikey_change", args=[key.pk]),
                    key.prefix,
                    key.name,
                    key.created_at,
                    key.last_used_at or "never",
                    key.revoked_at or "no",
                )
                for key in keys
            ),
        )
        return format_html(
            "<table><thead><tr><th>Prefix</th><th>Name</th><th>Created</th><th>Last used</th><th>Revoked</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    def create_key_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET: a form. POST: create a key for the source and show it, this one time only."""
        source = get_object_or_404(Source, pk=object_id)
        if not (self.has_view_permission(request, source) and request.user.has_perm("chats.add_apikey")):
            raise PermissionDenied
        form = CreateApiKeyForm(request.POST if request.method == "POST" else None)
        raw_key = None
        key = None
        if request.method == "POST" and form.is_valid():
            key, raw_key = services.api_key_create(
                source=source, name=form.cleaned_data["name"], expires_at=form.expires_at(), actor=request.user
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Create an API key for {source}",
            "opts": self.opts,
            "original": source,
            "source": source,
            "form": form,
            "api_key": key,
            "raw_key": raw_key,
        }
        response = TemplateResponse(request, "admin/chats/source/create_key.html", context)
        # The key must not be kept by a browser or proxy cache (admin_view already adds no-cache headers).
        response["Cache-Control"] = "no-store"
        return response


class YesNoFilter(admin.SimpleListFilter):
    """A filter with two choices: rows matching `condition`, or the others."""

    condition: Q
    yes_label = "Yes"
    no_label = "No"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", self.yes_label), ("no", self.no_label)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(self.condition)
        if self.value() == "no":
            return queryset.exclude(self.condition)
        return queryset


class RevokedFilter(YesNoFilter):
    title = parameter_name = "revoked"
    condition = Q(revoked_at__isnull=False)
    yes_label, no_label = "Revoked", "Usable"


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are made by the service (from a source's page) and revoked, never edited or deleted; no hash shown."""

    list_display = ["prefix", "owner", "name", "created_at", "last_used_at", "expires_at", "revoked"]
    list_select_related = ["source", "user"]
    list_filter = [RevokedFilter, "source"]
    search_fields = ["prefix", "name", "source__name", "user__username"]
    fields = ["prefix", "source", "user", "name", "created_at", "last_used_at", "expires_at", "revoked_at"]
    readonly_fields = ["prefix", "source", "user", "name", "created_at", "last_used_at", "expires_at", "revoked_at"]
    actions = ["revoke_keys"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Revoke instead: the key stays on record, with its receipts.
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKey]:
        return super().get_queryset(request).select_related("source", "user")

    @admin.display(description="owner")
    def owner(self, obj: ApiKey) -> str:
        if obj.source is not None:
            return f"source: {obj.source}"
        return f"user: {obj.user}"

    @admin.display(description="revoked", boolean=True)
    def revoked(self, obj: ApiKey) -> bool:
        return obj.is_revoked

    @admin.action(description="Revoke the selected API keys", permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        for key in queryset.filter(revoked_at__isnull=True):
            services.api_key_revoke(key=key, actor=request.user)
            count += 1
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("chats.change_apikey")


# --------------------------------------------------------------------------------------------------------------
# Ingested data: read-only


class HasToolCallsFilter(YesNoFilter):
    title = "has tool calls"
    parameter_name = "has_tool_calls"
    condition = Q(tool_call_count__gt=0)


def _tool_calls_cell(message: Message) -> SafeString:
    return format_html_join(
        "",
        "<div>{} <code>{}</code> ({}{})</div>",
        (
            (
                call.name or call.type,
                call.call_id,
                "answered" if call.is_answered else "not answered",
                format_html("; arguments are not JSON: {}", call.arguments_error) if call.arguments_error else "",
            )
            for call in message.tool_calls.all()
        ),
    )


def _artifacts_cell(message: Message) -> SafeString:
    return format_html_join(
        "",
        "<div>{} <code>{}</code> ({}; {})</div>",
        (
            (
                artifact.kind,
                artifact.artifact_id,
                "well formed" if artifact.id_well_formed else "malformed id",
                artifact.state,
            )
            for artifact in message.artifacts.all()
        ),
    )


def _message_flags(message: Message) -> str:
    flags = []
    if message.tool_call_id:
        flags.append(f"answers {message.tool_call_id}")
    if message.is_orphan_result:
        flags.append("answers no call")
    if not message.on_active_path:
        flags.append("off the active path")
    if message.hidden:
        flags.append("hidden")
    return "; ".join(flags)


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
        "model_name",
        "input_format",
        "review_status",
        HasToolCallsFilter,
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
    readonly_fields = ["uuid", "created_at", "thread"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).select_related("source").defer("search_vector")

    @admin.display(description="title", ordering="title")
    def display_title(self, obj: Conversation) -> str:
        return obj.display_title

    @admin.display(description="messages, in order of arrival")
    def thread(self, obj: Conversation) -> str:
        """Every message with its tool calls and injections: three queries, however long the thread."""
        messages_ = list(
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
        if not messages_:
            return "No messages."
        rows = format_html_join(
            "",
            "<tr><td><a href='{}'>{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    reverse("admin:chats_message_change", args=[message.pk]),
                    message.position,
                    f"{message.role} ({message.name})" if message.name else message.role,
                    message.excerpt,
                    _tool_calls_cell(message),
                    _artifacts_cell(message),
                    _message_flags(message),
                )
                for message in messages_
            ),
        )
        shown = (
            format_html("<p>The first {} of {} messages.</p>", len(messages_), obj.message_count)
            if obj.message_count > len(messages_)
            else ""
        )
        return format_html(
            "{}<table><thead><tr><th>#</th><th>Role</th><th>Text</th><th>Tool calls</th><th>Injections</th>"
            "<th>Notes</th></tr></thead><tbody>{}</tbody></table>",
            shown,
            rows,
        )


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "conversation", "position", "depth", "role", "excerpt", "on_active_path"]
    list_select_related = ["conversation"]
    list_filter = ["section", "content_form", "on_active_path", "is_orphan_result", "hidden"]
    search_fields = ["=key", "=tool_call_id", "=conversation__external_id"]
    raw_id_fields = ["conversation", "parent"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return super().get_queryset(request).select_related("conversation", "parent")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.opts.concrete_fields] + ["excerpt"]

    @admin.display(description="text")
    def excerpt(self, obj: Message) -> str:
        return obj.excerpt


class AnsweredFilter(YesNoFilter):
    title = parameter_name = "answered"
    condition = Q(result_message__isnull=False)
    yes_label, no_label = "Answered", "Not answered"


class ArgumentsErrorFilter(YesNoFilter):
    title = "arguments are JSON"
    parameter_name = "arguments_json"
    condition = Q(arguments_error="")
    yes_label, no_label = "Valid JSON or empty", "Not JSON"


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

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.opts.concrete_fields]

    @admin.display(description="answered", boolean=True)
    def answered(self, obj: ToolCall) -> bool:
        return obj.is_answered

    @admin.display(description="arguments valid", boolean=True)
    def arguments_valid(self, obj: ToolCall) -> bool:
        return obj.has_valid_arguments


@admin.register(InjectedArtifact)
class InjectedArtifactAdmin(ReadOnlyAdmin):
    list_display = ["kind", "artifact_id", "id_well_formed", "requested", "resolved", "tool_name", "conversation"]
    list_select_related = ["conversation"]
    list_filter = ["kind", "id_well_formed", "requested", "resolved"]
    search_fields = ["^artifact_id", "=conversation__external_id"]
    raw_id_fields = ["conversation", "message", "tool_call"]
    ordering = ["-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[InjectedArtifact]:
        return super().get_queryset(request).select_related("conversation", "message", "tool_call")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.opts.concrete_fields]


@admin.register(IngestionReceipt)
class IngestionReceiptAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "source",
        "external_id",
        "input_format",
        "outcome",
        "messages_added",
        "size_bytes",
        "conversation",
    ]
    list_select_related = ["source", "conversation"]
    list_filter = ["outcome", "source", "created_at"]
    search_fields = ["=external_id", "=payload_sha256"]
    raw_id_fields = ["source", "api_key", "conversation"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[IngestionReceipt]:
        return super().get_queryset(request).select_related("source", "api_key", "conversation")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.opts.concrete_fields]


# --------------------------------------------------------------------------------------------------------------
# Labels and feedback


@admin.register(Label)
class LabelAdmin(AuditedModelAdmin):
    """Labels are created, changed and deleted by the services, which audit each (a label in use is protected)."""

    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    fields = ["name", "description", "created_at"]
    readonly_fields = ["created_at"]

    def save_model(self, request: HttpRequest, obj: Label, form: Any, change: bool) -> None:
        if change:
            stored = Label.objects.select_for_update().get(pk=obj.pk)
            services.label_update(label=stored, name=obj.name, description=obj.description, actor=request.user)
        else:
            label = services.label_create(name=obj.name, description=obj.description, actor=request.user)
            obj.pk, obj.created_at = label.pk, label.created_at

    def delete_model(self, request: HttpRequest, obj: Label) -> None:
        services.label_delete(label=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Label]) -> None:
        with transaction.atomic():
            for label in queryset:
                self.delete_model(request, label)


class FeedbackChangeForm(forms.ModelForm):
    class Meta:
        model = Feedback
        fields = ["score", "comment", "correction"]


@admin.register(Feedback)
class FeedbackAdmin(AuditedModelAdmin):
    """Viewable by whoever may view feedback; changed or deleted here only by superusers (reviewers use the
    review pages), and each change is audited and refreshes the conversation's summary."""

    form = FeedbackChangeForm
    list_display = ["uuid", "conversation", "message", "origin", "author", "score", "created_at"]
    list_select_related = ["conversation", "message", "author"]
    list_filter = ["origin", "score", "created_at"]
    search_fields = ["=author__username", "=conversation__external_id", "comment"]
    raw_id_fields = ["conversation", "message", "author"]
    show_full_result_count = False
    list_per_page = BIG_TABLE_PAGE_SIZE
    ordering = ["-created_at", "-id"]
    fields = [
        "uuid",
        "conversation",
        "message",
        "origin",
        "author",
        "score",
        "label_names",
        "comment",
        "correction",
        "raw",
        "created_at",
        "updated_at",
    ]
    readonly_fields = [
        "uuid",
        "conversation",
        "message",
        "origin",
        "author",
        "label_names",
        "raw",
        "created_at",
        "updated_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Feedback]:
        return super().get_queryset(request).select_related("conversation", "message", "author")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    @admin.display(description="labels")
    def label_names(self, obj: Feedback) -> str:
        return ", ".join(label.name for label in obj.labels.order_by("name")) or "-"

    def save_model(self, request: HttpRequest, obj: Feedback, form: Any, change: bool) -> None:
        assert isinstance(request.user, User)  # the admin site lets only signed-in staff this far
        stored = Feedback.objects.select_related("message", "conversation").get(pk=obj.pk)
        services.feedback_update(
            actor=request.user,
            feedback=stored,
            score=obj.score,
            labels=list(stored.labels.all()),
            comment=obj.comment,
            correction=obj.correction,
        )

    def delete_model(self, request: HttpRequest, obj: Feedback) -> None:
        assert isinstance(request.user, User)
        services.feedback_delete(actor=request.user, feedback=obj)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, set[str], Any]:
        # Its label rows go with the feedback; that they are read-only on their own does not stop this.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(str(FeedbackLabel._meta.verbose_name))
        return deleted, counts, perms_needed, protected

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> None:
        with transaction.atomic():
            for feedback in queryset.select_related("conversation", "message"):
                self.delete_model(request, feedback)


@admin.register(FeedbackLabel)
class FeedbackLabelAdmin(ReadOnlyAdmin):
    """The labels given in feedback (change them with the feedback, in the review pages)."""

    list_display = ["feedback", "label", "conversation"]
    list_select_related = ["feedback", "label", "conversation"]
    list_filter = ["label"]
    raw_id_fields = ["conversation", "feedback"]
    ordering = ["-id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeedbackLabel]:
        return super().get_queryset(request).select_related("feedback", "label", "conversation")


# --------------------------------------------------------------------------------------------------------------
# Audit


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an event here."""

    list_display = ["created_at", "actor_username", "action", "target_type", "target_id", "conversation_uuid"]
    list_select_related = ["actor"]
    list_filter = ["actor", "action", "created_at"]
    search_fields = ["actor_username", "target_id"]
    raw_id_fields = ["actor"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return super().get_queryset(request).select_related("actor")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.opts.concrete_fields]


# --------------------------------------------------------------------------------------------------------------
# Users and roles: Django's own admins, audited


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(AuditedModelAdmin, UserAdmin):
    """Users as Django manages them; adding, changing (flags, groups, permissions), deleting a user and setting
    their password are each audited (a password only as changed, never its hash)."""

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        with transaction.atomic():
            stored = self.get_object(request, unquote(id))
            before = services.audit_snapshot(stored) if stored is not None else None
            response = super().user_change_password(request, id, form_url)
            if stored is not None and before is not None:
                stored.refresh_from_db()
                services.audit_record_saved(actor=request.user, obj=stored, before=before)
        return response


@admin.register(Group)
class AuditedGroupAdmin(AuditedModelAdmin, GroupAdmin):
    """Groups are the roles (Reviewers, Auditors); a change to one's permissions is audited."""


class AuditedPasswordChangeForm(AdminPasswordChangeForm):
    """The admin's own "change password" page: the change is audited, with the person as actor."""

    def save(self, commit: bool = True) -> Any:
        with transaction.atomic():
            stored = User.objects.get(pk=self.user.pk)
            before = services.audit_snapshot(stored)
            user = super().save(commit=commit)
            if commit:
                stored.refresh_from_db()
                services.audit_record_saved(actor=stored, obj=stored, before=before)
        return user


admin.site.password_change_form = AuditedPasswordChangeForm
