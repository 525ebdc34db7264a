"""Saved views: a named filter set and order of the conversation list, personal or shared with the team."""

from __future__ import annotations

import uuid as uuid_lib

from django.conf import settings
from django.db import models
from django.db.models import Q, QuerySet
from django.urls import reverse

# A query string is what the list page's own URL carries; a view's is bounded like any stored text.
MAX_VIEW_QUERY = 2000
MAX_VIEW_NAME = 80


class SavedViewQuerySet(models.QuerySet["SavedView"]):
    def visible_to(self, user: object) -> QuerySet[SavedView]:
        """A person's own views and every shared one."""
        return self.filter(Q(owner=user) | Q(shared=True))


class SavedView(models.Model):
    uuid = models.UUIDField(default=uuid_lib.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=MAX_VIEW_NAME)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views")
    # The list's filters and order, as the list page's query string spells them ("score=down&model=gpt-4o").
    query = models.CharField(max_length=MAX_VIEW_QUERY, blank=True)
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SavedViewQuerySet.as_manager()

    class Meta:
        ordering = ("name", "id")
        constraints = [
            models.UniqueConstraint(fields=("owner", "name"), name="saved_view_name_unique_per_owner"),
            models.CheckConstraint(condition=~Q(name=""), name="saved_view_name_not_empty"),
        ]
        indexes = [
            # The list page and the navigation: "shared or mine", by name.
            models.Index(fields=("shared", "name"), name="saved_view_shared_name", condition=Q(shared=True)),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        """Opening a view is setting its filters: the list's own URL, bookmarkable."""
        url = reverse("chats:conversation_list")
        return f"{url}?{self.query}" if self.query else url
