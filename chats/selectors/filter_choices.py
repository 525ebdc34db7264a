"""The sources and labels the conversation list's filter form offers a person, cached (``offered_choices``), and
forgetting them (``offered_choices_forget``), which the services that change labels call."""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef

from chats.models import Conversation, Label, Source

# The sources (those with conversations) and the labels the list page's form offers a person, cached: the page
# would otherwise read both on every request (each through a server-side cursor: three round trips). A label
# changes only through chats.services.labels, which forgets them; a source is offered once its first conversation
# is stored, which the cache shows within CHOICES_SECONDS. What the filters accept is read from the database, so a
# source or label newer than the cache filters at once.
CHOICES_KEY = "conversation-filter-choices"
CHOICES_SECONDS = 60


def offered_choices_forget() -> None:
    """Forget the cached choices: now, and again once the transaction commits (a request in between could cache
    what the transaction is changing)."""
    cache.delete(CHOICES_KEY)
    transaction.on_commit(lambda: cache.delete(CHOICES_KEY))


def offered_choices() -> dict[str, list[str]]:
    """The names the list page's form offers a person, by parameter (source, label)."""
    offered: dict[str, list[str]] | None = cache.get(CHOICES_KEY)
    if offered is None:
        with_conversations = Exists(Conversation.objects.filter(source=OuterRef("pk")))
        offered = {
            "source": list(Source.objects.filter(with_conversations).order_by("name").values_list("name", flat=True)),
            "label": list(Label.objects.order_by("name").values_list("name", flat=True)),
        }
        cache.set(CHOICES_KEY, offered, CHOICES_SECONDS)
    return offered
