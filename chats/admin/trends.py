"""The Trends page's daily rollups in the admin, read-only: derived from the conversations and their feedback by
chats.services.trend_rollups (after each ingestion and feedback write, or `manage.py rollup_trends`), never edited."""

from __future__ import annotations

from django.contrib import admin

from chats.admin.base import ReadOnlyAdmin
from chats.models import TrendDay, TrendMember, TrendTally


@admin.register(TrendDay)
class TrendDayAdmin(ReadOnlyAdmin):
    list_display = ["day", "source", "model_name", "workflow", "conversations", "messages", "scored", "down"]
    list_select_related = ["source"]
    raw_id_fields = ["source"]


@admin.register(TrendTally)
class TrendTallyAdmin(ReadOnlyAdmin):
    list_display = ["day", "source", "figure", "name", "conversations"]
    list_select_related = ["source"]
    list_filter = ["figure"]
    raw_id_fields = ["source"]


@admin.register(TrendMember)
class TrendMemberAdmin(ReadOnlyAdmin):
    list_display = ["conversation_id", "day", "source_id"]
