"""The conversation list (its filters, search, chips and count) and the next unreviewed conversation."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from chats.db_router import replica_lag_tolerated
from chats.filters.conversations import ConversationFilter
from chats.forms import ListPageForm, QueueForm
from chats.models import Conversation
from chats.selectors.conversations import (
    conversation_count_bounded,
    conversation_page,
    next_in_queue,
)
from chats.selectors.conversations import conversation_list as list_columns
from chats.selectors.exports import BULK_EXPORT_FORMATS
from chats.selectors.review import queue_choices
from chats.selectors.saved_views import saved_views_read
from chats.views.common import LIST_EXTRA_KEYS, actor, list_query_string, reviewer_page, roles_of

# The filters shown next to the search box; the others are under "More filters".
LIST_MAIN_FILTERS = ("source", "model", "score", "status")


def _list_chips(filterset: ConversationFilter, list_query: str) -> list[dict[str, str]]:
    """Each active filter (and a non-default order) as a chip whose link is the same list without it."""
    pairs = parse_qsl(list_query)
    base = reverse("chats:conversation_list")
    chips = []
    for index, (key, value) in enumerate(pairs):
        if key == "sort":
            label, shown = "Order", "oldest first" if value == "oldest" else value
        else:
            field = filterset.form.fields.get(key)
            label = str(field.label) if field is not None and field.label else key
            choices = getattr(field, "choices", None) if field is not None else None
            named = {str(choice): str(name) for choice, name in choices or () if choice != ""}
            shown = named.get(value, value)
        rest = urlencode(pairs[:index] + pairs[index + 1 :])
        chips.append({"key": key, "label": label, "value": shown, "remove": f"{base}?{rest}" if rest else base})
    return chips


@replica_lag_tolerated
@require_GET
@reviewer_page()
def conversation_list(request: HttpRequest) -> HttpResponse:
    # A person reads every source's conversations (API keys are the ones scoped to a source).
    conversations = Conversation.objects.all()
    filterset = ConversationFilter(request.GET or None, queryset=list_columns(conversations), request=request)
    filterset.offer_cached_choices()
    oldest_first, after, before = ListPageForm(request.GET).values()
    valid = not filterset.is_bound or filterset.is_valid()
    page = conversation_page(filterset.qs, after=after, before=before, oldest_first=oldest_first)
    list_query = list_query_string(request.GET)
    can_lead = roles_of(request).can_lead
    # A search counts its own matches (with the other filters); otherwise the list counts, up to a bound.
    search_count = filterset.search_count
    result_count = (
        search_count if search_count is not None else (conversation_count_bounded(filterset.qs) if valid else None)
    )
    more_filters = [field for field in filterset.form if field.name not in ("q", *LIST_MAIN_FILTERS)]
    chips = _list_chips(filterset, list_query)
    return render(
        request,
        "chats/conversation_list.html",
        {
            "filterset": filterset,
            "main_filters": [filterset.form[name] for name in LIST_MAIN_FILTERS],
            "more_filters": more_filters,
            # "More filters" stays folded (its active filters show as chips) unless one of its values is refused.
            "more_open": any(field.errors for field in more_filters),
            "chips": chips,
            "page": page,
            "list_query": list_query,
            "oldest_first": oldest_first,
            "has_filters": bool(list_query),
            "result_count": result_count,
            # A search's matches, counted up to a bound; the conversations search reads without their vectors.
            "search_count": search_count,
            "saved_views": saved_views_read(actor(request)),
            "can_share_views": can_lead,
            # Leads add the filters' conversations (or the selected rows) to a queue.
            "can_lead": can_lead,
            "queues": queue_choices() if can_lead else [],
            "list_pairs": parse_qsl(list_query) if can_lead else [],
            # The export's own spelling of the same filters (the format filter is `input_format` there).
            "export_pairs": [
                ("input_format" if key == "format" else key, value)
                for key, value in parse_qsl(list_query)
                if key not in LIST_EXTRA_KEYS
            ],
            "export_formats": BULK_EXPORT_FORMATS,
            "active_nav": "conversations",
        },
        # An invalid filter is a 400, as on the API; the page shows its error next to the field.
        status=200 if valid else 400,
        using="jinja2",
    )


@require_GET
@reviewer_page()
def next_unreviewed(request: HttpRequest) -> HttpResponse:
    """The next conversation of the queue (the list with its current filters) that is not reviewed yet."""
    filterset = ConversationFilter(request.GET or None, queryset=Conversation.objects.all(), request=request)
    current = None
    queue = QueueForm(request.GET)
    if queue.is_valid() and queue.cleaned_data["from_"]:  # none, or a malformed one: start from the top
        current = Conversation.objects.filter(uuid=queue.cleaned_data["from_"]).first()
    found = next_in_queue(filterset.qs, current)
    list_query = list_query_string(request.GET)
    if found is None:
        messages.info(request, "No conversation left to review with these filters.")
        return redirect(reverse("chats:conversation_list") + (f"?{list_query}" if list_query else ""))
    return redirect(found.get_absolute_url() + (f"?{list_query}" if list_query else ""))
