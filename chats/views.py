"""The review pages. Views translate requests into selector reads and service calls, and nothing more.

Every page needs a signed-in reviewer, auditor or staff member; only reviewers (and superusers) write. Writes
answer an htmx request with the re-rendered partial, and a plain form post with a redirect back to the same
place (the page's query string, so the list filters, and the message's anchor).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import parse_qsl, urlencode

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.filters.conversations import ConversationFilter
from chats.forms import (
    ArtifactListForm,
    BranchForm,
    FeedbackForm,
    ListPageForm,
    QueueForm,
    ReviewStatusForm,
    SignInForm,
    ThreadForm,
    VersionDiffForm,
)
from chats.integers import parse_int
from chats.models import Conversation, Feedback, Label, Message, ReviewStatus, Score
from chats.roles import Roles, request_roles
from chats.selectors.activity import activity_read
from chats.selectors.artifacts import (
    ARTIFACT_SORTS,
    ArtifactFilters,
    PayloadVersion,
    artifact_page,
    artifact_summaries_of,
    artifact_versions,
    listed_only_conversations,
    payload_diff,
)
from chats.selectors.conversations import (
    conversation_count_bounded,
    conversation_page,
    next_in_queue,
    not_indexed_count,
)
from chats.selectors.conversations import conversation_list as list_columns
from chats.selectors.dashboard import Dashboard, dashboard_read
from chats.selectors.exports import BULK_EXPORT_FORMATS
from chats.selectors.feedback import feedback_for_target
from chats.selectors.given import given_read
from chats.selectors.review import queue_choices
from chats.selectors.saved_views import saved_views_read
from chats.selectors.threads import FIRST_WINDOW, WINDOW_BYTES, WINDOW_SIZE, Thread
from chats.services import branches as branch_services
from chats.services import feedback as feedback_services
from chats.services import review as review_services
from chats.services.reads import thread_open

# The list's own parameters, kept with the filters in every link that leads back to it.
LIST_EXTRA_KEYS = ("sort",)


def roles_of(request: HttpRequest) -> Roles:
    """What the signed-in user may do here: one query for their groups, once per request."""
    return request_roles(request)


def reviewer_page(*, write: bool = False) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Sign-in required (else to the sign-in page), then a reader role; ``write`` also requires a reviewer."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            roles = roles_of(request)
            if not roles.can_read or (write and not roles.can_write):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def _actor(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # reviewer_page() lets only signed-in users through
    return user


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _list_query(params: QueryDict) -> str:
    """The filters (and sort) of a query string, without paging: what links back to the list keep."""
    keys = [*ConversationFilter.base_filters, *LIST_EXTRA_KEYS]
    pairs = [(key, value) for key in keys for value in params.getlist(key) if value != ""]
    return urlencode(pairs)


def _feedback_urls(conversation: Conversation) -> dict[str, str]:
    """Reversed once per page rather than once per message."""
    return {
        "feedback_save": reverse("chats:feedback_save", args=[conversation.uuid]),
        "feedback_form": reverse("chats:feedback_form", args=[conversation.uuid]),
    }


def _safe_next(request: HttpRequest, candidate: str | None, fallback: str) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return fallback


def _with_anchor(url: str, anchor: str) -> str:
    return f"{url.split('#', 1)[0]}#{anchor}"


# --------------------------------------------------------------------------------------------------------------
# Pages


def dashboard_links(dashboard: Dashboard) -> dict[str, list[str | None]]:
    """Per figure of the dashboard, the conversation list behind each of its numbers (None where the list has no
    filter for it: a conversation without a model, a tool call without a name)."""
    base = reverse("chats:conversation_list")

    def to(**query: str) -> str:
        return f"{base}?{urlencode(query)}"

    scores = {label: str(value) for value, label in Score.choices}
    statuses = {label: str(value) for value, label in ReviewStatus.choices}
    return {
        "by_source": [to(source=name) for name, _ in dashboard.by_source],
        "by_status": [to(status=statuses[label]) for label, _ in dashboard.by_status],
        "by_model": [to(model=name) if name != "(none)" else None for name, _ in dashboard.by_model],
        "by_score": [to(score=scores[label]) for label, _ in dashboard.by_score],
        "by_label": [to(label=name) for name, _ in dashboard.by_label],
        "top_tools": [to(tool_name=name) if name != "(unnamed)" else None for name, _ in dashboard.top_tools],
        "top_artifacts": [to(artifact_id=artifact_id) for artifact_id, _, _ in dashboard.top_artifacts],
        "violation_chart_rows": [
            to(policy="violation", date_from=day, date_to=day) for day, _ in dashboard.violation_chart_rows
        ],
    }


@require_GET
@reviewer_page()
def home(request: HttpRequest) -> HttpResponse:
    dashboard = dashboard_read()
    context = {"dashboard": dashboard, "dashboard_links": dashboard_links(dashboard), "active_nav": "home"}
    return render(request, "chats/home.html", context, using="jinja2")


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


@require_GET
@reviewer_page()
def conversation_list(request: HttpRequest) -> HttpResponse:
    # A person reads every source's conversations (API keys are the ones scoped to a source).
    conversations = Conversation.objects.all()
    filterset = ConversationFilter(request.GET or None, queryset=list_columns(conversations))
    filterset.offer_cached_choices()
    oldest_first, after, before = ListPageForm(request.GET).values()
    valid = not filterset.is_bound or filterset.is_valid()
    page = conversation_page(filterset.qs, after=after, before=before, oldest_first=oldest_first)
    list_query = _list_query(request.GET)
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
            "not_indexed": not_indexed_count(conversations),
            "saved_views": saved_views_read(_actor(request)),
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
    filterset = ConversationFilter(request.GET or None, queryset=Conversation.objects.all())
    current = None
    queue = QueueForm(request.GET)
    if queue.is_valid() and queue.cleaned_data["from_"]:  # none, or a malformed one: start from the top
        current = Conversation.objects.filter(uuid=queue.cleaned_data["from_"]).first()
    found = next_in_queue(filterset.qs, current)
    list_query = _list_query(request.GET)
    if found is None:
        messages.info(request, "No conversation left to review with these filters.")
        return redirect(reverse("chats:conversation_list") + (f"?{list_query}" if list_query else ""))
    return redirect(found.get_absolute_url() + (f"?{list_query}" if list_query else ""))


def _path_query(request: HttpRequest, at: int | None) -> str:
    """The list filters and the branch shown: what every link to another window of the same path keeps."""
    return "&".join(part for part in (_list_query(request.GET), urlencode({"at": at}) if at else "") if part)


def _thread_context(request: HttpRequest, conversation: Conversation, data: Thread) -> dict[str, Any]:
    """What the message list needs, on the page and in a chunk of it."""
    path_query = _path_query(request, data.at)
    page_url = conversation.get_absolute_url()
    return {
        "conversation": conversation,
        "thread": data,
        "list_query": _list_query(request.GET),
        # Links to a message outside the window: the page around it (the script loads it in place instead).
        "path_query": path_query,
        "thread_query": path_query,
        # ?feedback=<message id or "conversation">: the feedback form to show open (the no-JavaScript way to it).
        "open_feedback": request.GET.get("feedback", ""),
        "urls": _feedback_urls(conversation),
        "next_url": f"{page_url}?{path_query}" if path_query else page_url,
        "chunk_url": reverse("chats:thread_messages", args=[conversation.uuid]),
        "can_write": roles_of(request).can_write,
    }


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
            "given": given_read(data),
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


# --------------------------------------------------------------------------------------------------------------
# Writes


def _feedback_block(
    request: HttpRequest,
    conversation: Conversation,
    message: Message | None,
    *,
    errors: list[str] | None = None,
    next_url: str = "",
    status: int = 200,
    show_form: bool = False,
    saved: bool = False,
) -> HttpResponse:
    entries = feedback_for_target(conversation, message)
    own = next((f for f in entries if f.author_id == request.user.pk), None)
    return render(
        request,
        "chats/_feedback.html",
        {
            "conversation": conversation,
            "target": message,
            "entries": entries,
            "own": own,
            "labels": list(Label.objects.all()),
            "can_write": True,
            "next_url": next_url,
            "errors": errors or [],
            "saved": saved,
            "show_form": show_form or bool(errors),
            "urls": _feedback_urls(conversation),
        },
        status=status,
        using="jinja2",
    )


def _feedback_done(
    request: HttpRequest,
    conversation: Conversation,
    message: Message | None,
    next_url: str,
    errors: list[str] | None = None,
) -> HttpResponse:
    if _is_htmx(request):
        return _feedback_block(request, conversation, message, errors=errors, next_url=next_url, saved=not errors)
    if errors:
        for error in errors:
            messages.error(request, error)
    else:
        messages.success(request, "Feedback saved.")
    anchor = f"m-{message.pk}" if message else "conversation-feedback"
    return HttpResponseRedirect(_with_anchor(next_url, anchor))


@require_POST
@reviewer_page(write=True)
def feedback_save(request: HttpRequest, uuid: str) -> HttpResponse:
    conversation = get_object_or_404(Conversation, uuid=uuid)
    form = FeedbackForm(request.POST)
    fallback = conversation.get_absolute_url()
    message: Message | None = None
    if not form.is_valid():
        message_id = parse_int(request.POST.get("message", ""), minimum=1)
        if message_id is not None:
            message = Message.objects.filter(conversation=conversation, pk=message_id).first()
        errors = [f"{name}: {'; '.join(str(e) for e in errs)}" for name, errs in form.errors.items()]
        return _feedback_done(
            request, conversation, message, _safe_next(request, request.POST.get("next"), fallback), errors
        )
    data = form.cleaned_data
    next_url = _safe_next(request, data["next"], fallback)
    if data["message"]:
        message = get_object_or_404(Message, conversation=conversation, pk=data["message"])
    values = {
        "score": data["score"],
        "labels": list(data["labels"]),
        "comment": data["comment"],
        "correction": data["correction"],  # refused by the service on anything but an assistant message
    }
    try:
        if data["feedback"]:
            feedback = get_object_or_404(
                Feedback.objects.select_related("conversation", "message"),
                uuid=data["feedback"],
                conversation=conversation,
            )
            if feedback.message_id != (message.pk if message else None):
                raise Http404("This feedback is not on that message.")
            feedback_services.feedback_update(actor=_actor(request), feedback=feedback, **values)
        else:
            feedback_services.feedback_submit(
                author=_actor(request),
                conversation=conversation,
                message=message,
                **values,
            )
    except InvalidInput as invalid:
        return _feedback_done(request, conversation, message, next_url, invalid.messages)
    return _feedback_done(request, conversation, message, next_url)


@require_GET
@reviewer_page(write=True)
def feedback_form(request: HttpRequest, uuid: str) -> HttpResponse:
    """The feedback block of one message (or of the conversation) with its form open, for htmx to swap in."""
    conversation = get_object_or_404(Conversation, uuid=uuid)
    raw_message = request.GET.get("message", "")
    message = None
    if raw_message:
        message_id = parse_int(raw_message, minimum=1)
        if message_id is None:
            raise Http404("No such message.")
        message = get_object_or_404(Message, conversation=conversation, pk=message_id)
    next_url = _safe_next(request, request.GET.get("next"), conversation.get_absolute_url())
    return _feedback_block(request, conversation, message, next_url=next_url, show_form=True)


@require_POST
@reviewer_page(write=True)
def feedback_delete(request: HttpRequest, uuid: str, feedback_uuid: str) -> HttpResponse:
    conversation = get_object_or_404(Conversation, uuid=uuid)
    feedback = get_object_or_404(
        Feedback.objects.select_related("conversation", "message"), uuid=feedback_uuid, conversation=conversation
    )
    message = feedback.message
    feedback_services.feedback_delete(actor=_actor(request), feedback=feedback)
    next_url = _safe_next(request, request.POST.get("next"), conversation.get_absolute_url())
    if _is_htmx(request):
        return _feedback_block(request, conversation, message, next_url=next_url)
    messages.success(request, "Feedback deleted.")
    return HttpResponseRedirect(_with_anchor(next_url, f"m-{message.pk}" if message else "conversation-feedback"))


@require_POST
@reviewer_page(write=True)
def review_status(request: HttpRequest, uuid: str) -> HttpResponse:
    conversation = get_object_or_404(Conversation, uuid=uuid)
    form = ReviewStatusForm(request.POST)
    next_url = _safe_next(request, request.POST.get("next"), conversation.get_absolute_url())
    if not form.is_valid():
        return HttpResponse("Unknown review status.", status=400)
    review_services.conversation_set_review_status(
        actor=_actor(request),
        conversation=conversation,
        status=form.cleaned_data["status"],
    )
    if _is_htmx(request):
        return render(
            request,
            "chats/_review_status.html",
            {"conversation": conversation, "can_write": True, "next_url": next_url, "saved": True},
            using="jinja2",
        )
    messages.success(request, f"Marked {conversation.get_review_status_display().lower()}.")
    return HttpResponseRedirect(_with_anchor(next_url, "review-status"))


@require_POST
@reviewer_page(write=True)
def active_branch(request: HttpRequest, uuid: str) -> HttpResponse:
    """Make the branch being read the conversation's active one (what exports and the default view show)."""
    conversation = get_object_or_404(Conversation, uuid=uuid)
    form = BranchForm(request.POST)
    if not form.is_valid():
        return HttpResponse("A message is required.", status=400)
    message = get_object_or_404(Message, conversation=conversation, pk=form.cleaned_data["message"])
    branch_services.message_set_active_branch(conversation=conversation, message=message, actor=_actor(request))
    messages.success(request, "This branch is now the active one.")
    list_query = _list_query(
        request.POST if not form.cleaned_data["next"] else QueryDict(form.cleaned_data["next"].partition("?")[2])
    )
    url = conversation.get_absolute_url() + (f"?{list_query}" if list_query else "")
    return HttpResponseRedirect(_with_anchor(url, f"m-{message.pk}"))


class SignInView(auth_views.LoginView):
    """Django's sign-in. Failed attempts are counted by django-axes per user name and address; a locked-out one
    answers 429 (see chats/throttling.py)."""

    authentication_form = SignInForm
    template_engine = "jinja2"


# --------------------------------------------------------------------------------------------------------------
# Artifacts


@require_GET
@reviewer_page()
def artifact_list(request: HttpRequest) -> HttpResponse:
    """Every artifact id seen (injected, or only listed by an injection context), with its figures."""
    form = ArtifactListForm(request.GET)
    filters, sort, number = form.selection()
    page = artifact_page(filters, sort=sort, number=number)
    query = form.query()
    return render(
        request,
        "chats/artifact_list.html",
        {
            "form": form,
            "page": page,
            "query": query,
            "sort": sort,
            "sorts": ARTIFACT_SORTS,
            "has_filters": bool(query),
            "active_nav": "artifacts",
        },
        using="jinja2",
    )


def _pick(versions: list[PayloadVersion], prefix: str | None) -> PayloadVersion | None:
    if not prefix:
        return None
    return next((version for version in versions if version.digest and version.digest.startswith(prefix)), None)


@require_GET
@reviewer_page()
def artifact_detail(request: HttpRequest, artifact_id: str) -> HttpResponse:
    """One artifact id: its figures per kind, the distinct payloads it was injected with and the conversations
    that got each, the conversations that only listed it, and a diff between two payloads."""
    if "\x00" in artifact_id:  # never an id: PostgreSQL refuses NUL in text
        raise Http404("No such artifact.")
    filters = ArtifactFilters(artifact_id=artifact_id)
    summaries = artifact_summaries_of(filters)
    if not summaries:
        raise Http404("No conversation injected or listed this artifact.")
    versions = artifact_versions(filters)
    resolved = [version for version in versions if version.digest]
    form = VersionDiffForm(request.GET)
    form.is_valid()
    chosen = getattr(form, "cleaned_data", {})
    old = _pick(resolved, chosen.get("old")) or (resolved[-2] if len(resolved) > 1 else None)
    new = _pick(resolved, chosen.get("new")) or (resolved[-1] if len(resolved) > 1 else None)
    return render(
        request,
        "chats/artifact_detail.html",
        {
            "artifact_id": artifact_id,
            "summaries": summaries,
            "versions": versions,
            "resolved": resolved,
            "diff": payload_diff(old, new) if old is not None and new is not None and old is not new else None,
            "listed_only": listed_only_conversations(filters),
            "conversations_query": urlencode({"artifact_id": artifact_id}),
            "active_nav": "artifacts",
        },
        using="jinja2",
    )
