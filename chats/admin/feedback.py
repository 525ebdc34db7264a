"""Labels and feedback: labels are managed here and feedback is corrected or removed by superusers, each through
the services, which audit it; the labels given in feedback are read-only."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from chats.admin.base import BIG_TABLE_PAGE_SIZE, AuditedModelAdmin, ReadOnlyAdmin
from chats.models import Feedback, FeedbackLabel, Label
from chats.services.feedback import feedback_delete, feedback_update
from chats.services.labels import label_create, label_delete, label_update


@admin.register(Label)
class LabelAdmin(AuditedModelAdmin[Label]):
    """Labels are created, changed and deleted by the services, which audit each (a label in use is protected)."""

    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    fields = ["name", "description", "created_at"]
    readonly_fields = ["created_at"]

    def save_model(self, request: HttpRequest, obj: Label, form: forms.ModelForm[Label], change: bool) -> None:
        if change:
            stored = Label.objects.select_for_update().get(pk=obj.pk)
            label_update(label=stored, name=obj.name, description=obj.description, actor=request.user)
        else:
            label = label_create(name=obj.name, description=obj.description, actor=request.user)
            obj.pk, obj.created_at = label.pk, label.created_at

    def delete_model(self, request: HttpRequest, obj: Label) -> None:
        label_delete(label=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Label]) -> None:
        with transaction.atomic():
            for label in queryset:
                self.delete_model(request, label)


class FeedbackChangeForm(forms.ModelForm[Feedback]):
    class Meta:
        model = Feedback
        fields = ["score", "comment", "correction"]


@admin.register(Feedback)
class FeedbackAdmin(AuditedModelAdmin[Feedback]):
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

    def has_change_permission(self, request: HttpRequest, obj: Feedback | None = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Feedback | None = None) -> bool:
        return request.user.is_superuser

    @admin.display(description="labels")
    def label_names(self, obj: Feedback) -> str:
        return ", ".join(label.name for label in obj.labels.order_by("name")) or "-"

    def save_model(self, request: HttpRequest, obj: Feedback, form: forms.ModelForm[Feedback], change: bool) -> None:
        assert isinstance(request.user, User)  # the admin site lets only signed-in staff this far
        stored = Feedback.objects.select_related("message", "conversation").get(pk=obj.pk)
        feedback_update(
            actor=request.user,
            feedback=stored,
            score=obj.score,
            labels=list(stored.labels.all()),
            comment=obj.comment,
            correction=obj.correction,
        )

    def delete_model(self, request: HttpRequest, obj: Feedback) -> None:
        assert isinstance(request.user, User)
        feedback_delete(actor=request.user, feedback=obj)

    def get_deleted_objects(
        self, objs: Sequence[Feedback] | QuerySet[Feedback], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
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
