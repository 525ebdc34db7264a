"""A conversation's thread in windows (the page and its chunks), and choosing the branch it shows."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from chats.db_router import replica_lag_tolerated
from chats.forms import BranchForm, ThreadForm
from chats.models import Conversation, Message
from chats.selectors.activity import activity_read
from chats.selectors.model_inputs import model_inputs_read
from chats.selectors.threads import FIRST_WINDOW, WINDOW_BYTES, WINDOW_SIZE, Thread
from chats.services import branches as branch_services
from chats.services.reads import thread_open
from chats.views.common import actor, feedback_urls, list_query_string, reviewer_page, roles_of, with_anchor


def _path_query(request: HttpRequest, at: int | None) -> str:
    """The list filters and the branch shown: what every link to another window of the same path keeps."""
    return "&".join(part for part in (list_query_string(request.GET), urlencode({"at": at}) if at else "") if part)


def _thread_context(request: HttpRequest, conversation: Conversation, data: Thread) -> dict[str, Any]:
    """What the message list needs, on the page and in a chunk of it."""
    path_query = _path_query(request, data.at)
    page_url = conversation.get_absolute_url()
    return {
        "conversation": conversation,
        "thread": data,
        "list_query": list_query_string(request.GET),
        # Links to a message outside the window: the page around it (the script loads it in place instead).
        "path_query": path_query,
        "thread_query": path_query,
        # ?feedback=<message id or "conversation">: the feedback form to show open (the no-JavaScript way to it).
        "open_feedback": request.GET.get("feedback", ""),
        "urls": feedback_urls(conversation),
        "next_url": f"{page_url}?{path_query}" if path_query else page_url,
        "chunk_url": reverse("chats:thread_messages", args=[conversation.uuid]),
        "can_write": roles_of(request).can_write,
    }


@replica_lag_tolerated
@require_GET
@reviewer_page()
def thread(request: HttpRequest, uuid: str) -> HttpResponse:
    """The thread's first window (or the one ?after= or ?around= names; a branch, ?at=, opens around the message
    it was chosen through): the rest comes in chunks (thread_messages) as the reader scrolls or jumps."""
    conversation = get_object_or_404(Conversation.objects.select_related("source"), uuid=uuid)
    form = ThreadForm(request.GET)
    form.is_valid()  # a parameter that is not valid is left out; the others still apply
    params = form.cleaned_data
    at, after = params.get("at"), params.get("after")
    data = thread_open(  # records the view
        conversation,
        viewer=request.user,
        at=at,
        after=after,
        around=params.get("around") or (at if after is None else None),
        unanswered_after=params.get("unanswered_after"),
        limit=FIRST_WINDOW,
        byte_budget=WINDOW_BYTES,
    )
    context = _thread_context(request, conversation, data)
    window = data.window
    context.update(
        {
            "given": model_inputs_read(data),
            # The no-JavaScript link to the window before this one: after a position, or from the start (on another
            # branch, around its first message: the branch's own message would open around itself).
            "before_params": {"after": window.start - 1 - FIRST_WINDOW}
            if window.start - 1 - FIRST_WINDOW >= 0
            else {"around": window.path[0]}
            if window.path and data.at
            else {},
            # The link to the next unanswered tool call searches past the one this window was opened at, if any.
            "unanswered_from": next((m.depth for m in window.messages if m.pk == window.around), -1)
            if params.get("unanswered_after") is not None
            else -1,
            # Auditors and staff only: for anyone else its queries are not even run.
            "activity": activity_read(conversation) if roles_of(request).can_audit else None,
            "active_nav": "conversations",
        }
    )
    return render(request, "chats/thread.html", context, using="jinja2")


@require_GET
@reviewer_page()
def thread_messages(request: HttpRequest, uuid: str) -> HttpResponse:
    """A window of the thread as the page's list items (?after=<position>&limit=, ?around=<message id>, or
    ?unanswered_after=<position> for the next unanswered tool call; ?at= for another branch), for the page's script
    to insert where the reader scrolls or jumps to."""
    conversation = get_object_or_404(Conversation.objects.select_related("source"), uuid=uuid)
    form = ThreadForm(request.GET)
    if not form.is_valid():
        return HttpResponse(form.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
    params = form.cleaned_data
    data = thread_open(  # records the view
        conversation,
        viewer=request.user,
        at=params["at"],
        after=params["after"],
        around=params["around"],
        unanswered_after=params["unanswered_after"],
        limit=params["limit"] or WINDOW_SIZE,
        byte_budget=WINDOW_BYTES,
    )
    if params["unanswered_after"] is not None and data.window.around is None:
        raise Http404("No unanswered tool call past that position.")
    if params["around"] is not None and data.window.around is None:
        raise Http404("That message is not on the path shown.")
    return render(request, "chats/_messages.html", _thread_context(request, conversation, data), using="jinja2")


@require_POST
@reviewer_page(write=True)
def active_branch(request: HttpRequest, uuid: str) -> HttpResponse:
    """Make the branch being read the conversation's active one (what exports and the default view show)."""
    conversation = get_object_or_404(Conversation, uuid=uuid)
    form = BranchForm(request.POST)
    if not form.is_valid():
        return HttpResponse("A message is required.", status=400)
    message = get_object_or_404(Message, conversation=conversation, pk=form.cleaned_data["message"])
    branch_services.message_set_active_branch(conversation=conversation, message=message, actor=actor(request))
    messages.success(request, "This branch is now the active one.")
    list_query = list_query_string(
        request.POST if not form.cleaned_data["next"] else QueryDict(form.cleaned_data["next"].partition("?")[2])
    )
    url = conversation.get_absolute_url() + (f"?{list_query}" if list_query else "")
    return HttpResponseRedirect(with_anchor(url, f"m-{message.pk}"))
