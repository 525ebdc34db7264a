"""Team review in the admin: queues, their rules, their rubric versions, items, leases, reviews, resolutions and
datasets, read-only (they change through the review, rule and dataset services and API, which audit every write)."""

from __future__ import annotations

from django.contrib import admin

from chats.admin.base import ReadOnlyAdmin
from chats.models import (
    Dataset,
    DatasetItem,
    DatasetLine,
    Lease,
    Queue,
    QueueItem,
    QueueRule,
    Resolution,
    Review,
    RubricVersion,
)


@admin.register(Queue)
class QueueAdmin(ReadOnlyAdmin):
    list_display = ["name", "reviews_per_item", "created_by", "created_at"]
    list_select_related = ["created_by"]
    search_fields = ["name"]
    raw_id_fields = ["created_by"]


@admin.register(QueueRule)
class QueueRuleAdmin(ReadOnlyAdmin):
    list_display = ["name", "queue", "sample_rate", "enabled", "created_by", "updated_at"]
    list_select_related = ["queue", "created_by"]
    list_filter = ["enabled"]
    search_fields = ["name"]
    raw_id_fields = ["queue", "created_by"]


@admin.register(RubricVersion)
class RubricVersionAdmin(ReadOnlyAdmin):
    list_display = ["queue", "version", "created_at"]
    list_select_related = ["queue"]


@admin.register(QueueItem)
class QueueItemAdmin(ReadOnlyAdmin):
    list_display = ["id", "queue", "conversation", "submitted_count", "created_at"]
    list_select_related = ["queue", "conversation"]
    raw_id_fields = ["queue", "conversation"]


@admin.register(Lease)
class LeaseAdmin(ReadOnlyAdmin):
    list_display = ["item", "reviewer", "expires_at"]
    list_select_related = ["item", "reviewer"]
    raw_id_fields = ["conversation", "item", "reviewer"]


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = ["id", "item", "reviewer", "state", "submitted_at"]
    list_select_related = ["item", "reviewer"]
    list_filter = ["state"]
    raw_id_fields = ["conversation", "item", "reviewer", "rubric_version"]


@admin.register(Resolution)
class ResolutionAdmin(ReadOnlyAdmin):
    list_display = ["item", "lead", "created_at"]
    list_select_related = ["item", "lead"]
    raw_id_fields = ["conversation", "item", "lead", "rubric_version"]


@admin.register(Dataset)
class DatasetAdmin(ReadOnlyAdmin):
    list_display = ["name", "created_by", "created_at"]
    list_select_related = ["created_by"]
    search_fields = ["name"]
    raw_id_fields = ["created_by"]


@admin.register(DatasetItem)
class DatasetItemAdmin(ReadOnlyAdmin):
    list_display = ["id", "dataset", "conversation", "queue_name", "rubric_version_number", "lead_username"]
    list_select_related = ["dataset", "conversation"]
    raw_id_fields = ["dataset", "conversation", "queue_item", "queue", "rubric_version", "lead"]
    show_full_result_count = False


@admin.register(DatasetLine)
class DatasetLineAdmin(ReadOnlyAdmin):
    list_display = ["id", "dataset", "format", "index", "conversation_uuid"]
    list_select_related = ["dataset"]
    list_filter = ["format"]
    raw_id_fields = ["dataset"]
    show_full_result_count = False
