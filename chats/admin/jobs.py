"""Background jobs in the admin, read-only: export jobs, the chunks of their results (sizes, not bytes), and the
runs of queue rules. They change only through their services and tasks."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.http import HttpRequest

from chats.admin.base import ReadOnlyAdmin
from chats.models import ExportJob, ExportJobPart, QueueRuleRun


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = ["uuid", "requested_by", "source", "format", "state", "done", "total", "created_at"]
    list_select_related = ["requested_by", "source"]
    list_filter = ["state"]
    raw_id_fields = ["requested_by", "source", "api_key"]


@admin.register(ExportJobPart)
class ExportJobPartAdmin(ReadOnlyAdmin):
    """A chunk of a job's result: its size is shown, its bytes are downloaded from the job's API."""

    list_display = ["job", "index", "stored_bytes"]
    list_select_related = ["job"]
    fields = ["job", "index", "stored_bytes"]
    readonly_fields = ["stored_bytes"]
    raw_id_fields = ["job"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ExportJobPart]:
        queryset: QuerySet[ExportJobPart] = super().get_queryset(request)
        return queryset.defer("data").annotate(stored=Length("data"))

    @admin.display(description="bytes", ordering="stored")
    def stored_bytes(self, obj: ExportJobPart) -> int:
        return int(getattr(obj, "stored", 0))


@admin.register(QueueRuleRun)
class QueueRuleRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "rule", "requested_by", "state", "added", "created_at"]
    list_select_related = ["rule", "requested_by"]
    list_filter = ["state"]
    raw_id_fields = ["rule", "requested_by"]
