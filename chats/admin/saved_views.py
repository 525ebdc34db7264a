"""Saved views in the admin, read-only: their owners change them on the pages and the API, audited there."""

from __future__ import annotations

from django.contrib import admin

from chats.admin.base import ReadOnlyAdmin
from chats.models import SavedView


@admin.register(SavedView)
class SavedViewAdmin(ReadOnlyAdmin):
    list_display = ["name", "owner", "shared", "query", "updated_at"]
    list_select_related = ["owner"]
    list_filter = ["shared"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner"]
