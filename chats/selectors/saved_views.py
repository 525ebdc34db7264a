"""The saved views a person sees: their own, and those shared with the team."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import QuerySet

from chats.models import SavedView


def saved_views_visible(user: User) -> QuerySet[SavedView]:
    """A person's own views and every shared one, with their owners (one query)."""
    return SavedView.objects.visible_to(user).select_related("owner").order_by("name", "id")


@dataclass(frozen=True)
class SavedViews:
    mine: list[SavedView]
    shared: list[SavedView]  # shared by someone else (a person's own shared views are among `mine`)


def saved_views_read(user: User) -> SavedViews:
    """The list page's and the navigation's views, in one query."""
    views = list(saved_views_visible(user))
    return SavedViews(
        mine=[view for view in views if view.owner_id == user.pk],
        shared=[view for view in views if view.owner_id != user.pk],
    )
