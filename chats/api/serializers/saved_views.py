"""Saved views on the API: what a view shows of itself, and what a create or an update may give."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chats.models import SavedView


class SavedViewSerializer(serializers.ModelSerializer[SavedView]):
    owner = serializers.CharField(source="owner.username", read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    mine = serializers.SerializerMethodField()

    class Meta:
        model = SavedView
        fields = ("uuid", "name", "query", "shared", "owner", "mine", "url", "created_at", "updated_at")
        read_only_fields = fields

    def get_mine(self, view: SavedView) -> bool:
        user = self.context.get("user")
        return user is not None and view.owner_id == user.pk


class SavedViewInputSerializer(serializers.Serializer[Any]):
    """A create gives a name (and a query and sharing, else none and personal); an update any of them. The values
    are checked by the service (chats.services.saved_views), which names the field of each error."""

    name = serializers.CharField(required=True, allow_blank=True, trim_whitespace=False)
    query = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    shared = serializers.BooleanField(required=False)
