"""The team review pages of queues: the list, a queue's page, its edits and assignments, and "Add to queue" (the
review of one item and adjudication are in `chats.views.review_items`).

Who may do what is decided by `request_roles` and by the services: every reader sees the queues
`queues_visible` gives them (the queues they work; leads and auditors see all); leads create and edit queues,
assign items and resolve them; the members of a queue take its items and review them (the services refuse anyone
else: `NotAllowed`, the site's 403). Blind review is `item_reviews`'s decision; these views only show what it
returns.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.filters.conversations import ConversationFilter
from chats.forms import (
    AddToQueueForm,
    ItemLeadForm,
    ReviewQueueForm,
    RubricFormSet,
    RubricQuestionForm,
    rubric_questions,
)
from chats.integers import parse_int
from chats.models import Conversation, Queue, RubricVersion
from chats.review.agreement import MIN_ITEMS
from chats.review.agreement_chart import agreement_chart_layout, agreement_chart_rows
from chats.roles import Roles, lead_required
from chats.selectors.datasets import queue_datasets
from chats.selectors.review import (
    ITEM_STATES,
    queue_agreement,
    queue_item,
    queue_items_page,
    queue_progress,
    queue_reviewer_progress,
    queue_visible,
    queues_listed,
)
from chats.services import review as review_services
from chats.views.common import actor, list_query_string, reviewer_page, roles_of

ITEMS_SHOWN = 50  # items per page on a queue's page (the counts cover all)
STATE_CHOICES = [(name, state.label) for name, state in ITEM_STATES.items()]


class ItemListForm(forms.Form):
    """The item lists' query: `state` (one of ITEM_STATES; empty: every item) and `page` (from 1)."""

    state = forms.ChoiceField(choices=[("", "All"), *STATE_CHOICES], required=False)
    page = forms.CharField(required=False)

    def clean_page(self) -> int:
        text = self.cleaned_data["page"]
        if text in ("", None):
            return 1
        number = parse_int(text, minimum=1)
        if number is None:
            raise forms.ValidationError("Must be a page number from 1.", code="invalid")
        return number


def item_list_query(request: HttpRequest) -> tuple[str | None, int]:
    """The state and page asked for, or InvalidInput naming the parameter."""
    form = ItemListForm(request.GET)
    if not form.is_valid():
        raise InvalidInput(
            [
                {"path": f"/{name}", "message": " ".join(str(error) for error in errors)}
                for name, errors in form.errors.items()
            ]
        )
    return form.cleaned_data["state"] or None, form.cleaned_data["page"]


def bad_query(invalid: InvalidInput) -> HttpResponse:
    return HttpResponse("\n".join(input_errors(invalid)), status=400, content_type="text/plain; charset=utf-8")


def lead_roles(request: HttpRequest) -> Roles:
    """The services refuse anyone but a lead (`lead_required`); asked first here, so that the refusal comes before
    the form's errors."""
    roles = roles_of(request)
    lead_required(roles)
    return roles


def input_errors(invalid: InvalidInput) -> list[str]:
    return [f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in invalid.errors]


def form_errors(*forms: forms.BaseForm) -> list[str]:
    found = []
    for form in forms:
        for name, errors in form.errors.items():
            found += [f"{name}: {error}" if name != "__all__" else str(error) for error in errors]
    return found


def _question_rows(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [RubricQuestionForm.initial_of(question) for question in questions]


# --------------------------------------------------------------------------------------------------------------
# Queues


def _queue_list_page(
    request: HttpRequest, *, form: ReviewQueueForm, rubric: Any, errors: list[str], status: int = 200
) -> HttpResponse:
    roles = roles_of(request)
    return render(
        request,
        "chats/queue_list.html",
        {
            "queues": list(queues_listed(request.user, roles)),
            "can_lead": roles.can_lead,
            "form": form,
            "rubric": rubric,
            "errors": errors,
            "active_nav": "queues",
        },
        status=status,
        using="jinja2",
    )


@require_GET
@reviewer_page()
def queue_list(request: HttpRequest) -> HttpResponse:
    return _queue_list_page(request, form=ReviewQueueForm(), rubric=RubricFormSet(prefix="rubric"), errors=[])


@require_POST
@reviewer_page()
def queue_create(request: HttpRequest) -> HttpResponse:
    lead_roles(request)
    form = ReviewQueueForm(request.POST)
    rubric = RubricFormSet(request.POST, prefix="rubric")
    if not (form.is_valid() and rubric.is_valid()):
        errors = form_errors(form, *rubric.forms) + [str(e) for e in rubric.non_form_errors()]
        return _queue_list_page(request, form=form, rubric=rubric, errors=errors, status=400)
    data = form.cleaned_data
    try:
        queue = review_services.queue_create(
            actor=actor(request),
            name=data["name"],
            questions=rubric_questions(rubric),
            instructions=data["instructions"],
            reviews_per_item=data["reviews_per_item"],
            members=list(data["members"]),
        )
        if data.get("lease_minutes") is not None:
            review_services.queue_set_lease_minutes(
                actor=actor(request), queue=queue, lease_minutes=data["lease_minutes"]
            )
    except InvalidInput as invalid:
        return _queue_list_page(request, form=form, rubric=rubric, errors=input_errors(invalid), status=400)
    messages.success(request, f"Queue {queue.name!r} created.")
    return redirect("chats:queue_detail", pk=queue.pk)


def _agreement(queue: Queue) -> dict[str, Any]:
    """Agreement per question, for those who may see everyone's answers (leads and auditors): the figures would
    tell a reviewer the others' answers."""
    groups = queue_agreement(queue)
    figures = {group.name: group.figure for group in groups}
    return {
        "agreement": groups,
        "agreement_chart": agreement_chart_layout(agreement_chart_rows(figures)),
        "agreement_min_items": MIN_ITEMS,
    }


def _queue_page(
    request: HttpRequest,
    queue: Queue,
    *,
    form: ReviewQueueForm | None = None,
    rubric_form: forms.BaseFormSet[RubricQuestionForm] | None = None,
    errors: list[str] | None = None,
    status: int = 200,
) -> HttpResponse:
    roles = roles_of(request)
    try:
        state, page = item_list_query(request)
    except InvalidInput as invalid:
        return bad_query(invalid)
    detail = queue_visible(request.user, roles, queue.pk, detail=True)
    rubric: RubricVersion = detail.rubric_versions.all()[0]  # prefetched, newest first
    members = list(detail.members.all())
    if roles.can_lead and form is None:
        form = ReviewQueueForm(
            initial={
                "name": detail.name,
                "instructions": detail.instructions,
                "reviews_per_item": detail.reviews_per_item,
                "lease_minutes": detail.lease_minutes,
                "members": [member.username for member in members],
            }
        )
        rubric_form = RubricFormSet(initial=_question_rows(rubric.questions), prefix="rubric")
    return render(
        request,
        "chats/queue_detail.html",
        {
            "queue": detail,
            "rubric": rubric,
            "members": members,
            "is_member": any(member.pk == request.user.pk for member in members),
            "progress": queue_progress(detail),
            "reviewer_progress": queue_reviewer_progress(detail),
            **(_agreement(detail) if roles.can_oversee else {}),
            "listing": queue_items_page(detail, state=state, page=page, size=ITEMS_SHOWN, questions=rubric.questions),
            "states": STATE_CHOICES,
            "state": state or "",
            "datasets": queue_datasets(detail),
            "can_lead": roles.can_lead,
            "can_adjudicate": roles.can_oversee,
            "form": form,
            "rubric_form": rubric_form,
            "errors": errors or [],
            "active_nav": "queues",
        },
        status=status,
        using="jinja2",
    )


def _lead_queue(request: HttpRequest, pk: int) -> Queue:
    """A queue a lead changes: the lead's check first, then the queue (404)."""
    return queue_visible(request.user, lead_roles(request), pk)


@require_GET
@reviewer_page()
def queue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _queue_page(request, queue_visible(request.user, roles_of(request), pk))


@require_POST
@reviewer_page()
def queue_update(request: HttpRequest, pk: int) -> HttpResponse:
    queue = _lead_queue(request, pk)
    form = ReviewQueueForm(request.POST)
    rubric = RubricFormSet(request.POST, prefix="rubric")
    if not (form.is_valid() and rubric.is_valid()):
        errors = form_errors(form, *rubric.forms) + [str(e) for e in rubric.non_form_errors()]
        return _queue_page(request, queue, form=form, rubric_form=rubric, errors=errors, status=400)
    data = form.cleaned_data
    try:
        changed = review_services.queue_update(
            actor=actor(request),
            queue=queue,
            name=data["name"],
            instructions=data["instructions"],
            reviews_per_item=data["reviews_per_item"],
            questions=rubric_questions(rubric),
            members=list(data["members"]),
        )
        if data.get("lease_minutes") is not None:
            changed |= review_services.queue_set_lease_minutes(
                actor=actor(request), queue=queue, lease_minutes=data["lease_minutes"]
            )
    except InvalidInput as invalid:
        return _queue_page(request, queue, form=form, rubric_form=rubric, errors=input_errors(invalid), status=400)
    messages.success(request, "Queue saved." if changed else "Nothing changed.")
    return redirect("chats:queue_detail", pk=queue.pk)


@require_POST
@reviewer_page()
def queue_next(request: HttpRequest, pk: int) -> HttpResponse:
    """The reviewer's next item of the queue, held for them (item_lease_next), or back to the queue."""
    queue = queue_visible(request.user, roles_of(request), pk)
    item = review_services.item_lease_next(queue=queue, reviewer=actor(request))
    if item is None:
        messages.info(request, "Nothing left for you to review in this queue.")
        return redirect("chats:queue_detail", pk=queue.pk)
    return redirect("chats:queue_item", pk=queue.pk, item=item.pk)


@require_POST
@reviewer_page()
def queue_assign(request: HttpRequest, pk: int) -> HttpResponse:
    """A lead assigns an item to a named member, or releases the slots held on it (by one reviewer or all)."""
    queue = _lead_queue(request, pk)
    form = ItemLeadForm(request.POST)
    if not form.is_valid():
        for error in form_errors(form):
            messages.error(request, error)
        return redirect("chats:queue_detail", pk=queue.pk)
    item = queue_item(queue, form.cleaned_data["item"])
    reviewer = form.cleaned_data["reviewer"]
    try:
        if form.cleaned_data["action"] == "assign":
            if reviewer is None:
                raise InvalidInput([{"path": "/reviewer", "message": "choose the reviewer to assign it to"}])
            review_services.item_assign(actor=actor(request), item=item, reviewer=reviewer)
            messages.success(request, f"Item {item.pk} assigned to {reviewer.username}.")
        else:
            released = review_services.item_release(actor=actor(request), item=item, reviewer=reviewer)
            messages.success(request, f"Item {item.pk}: {released} slot{'s' if released != 1 else ''} released.")
    except InvalidInput as invalid:
        for error in input_errors(invalid):
            messages.error(request, error)
    return redirect("chats:queue_detail", pk=queue.pk)


# --------------------------------------------------------------------------------------------------------------
# Add to queue (the conversation list)


@require_POST
@reviewer_page()
def queue_add(request: HttpRequest) -> HttpResponse:
    """Add the list's current filters' conversations (the same FilterSet, set-based), or the selected rows."""
    lead_roles(request)
    list_query = list_query_string(request.POST)
    back = reverse("chats:conversation_list") + (f"?{list_query}" if list_query else "")
    form = AddToQueueForm(request.POST)
    if not form.is_valid():
        for error in form_errors(form):
            messages.error(request, error)
        return HttpResponseRedirect(back)
    queue = form.cleaned_data["queue"]
    if form.cleaned_data["scope"] == "selected":
        conversations = Conversation.objects.filter(uuid__in=form.cleaned_data["selected"])
    else:
        filterset = ConversationFilter(request.POST, queryset=Conversation.objects.all())
        if not filterset.is_valid():  # an invalid filter is left out of .qs: it would add every conversation
            for error in form_errors(filterset.form):
                messages.error(request, f"Nothing added: {error}")
            return HttpResponseRedirect(back)
        conversations = filterset.qs
    added = review_services.queue_add_conversations(actor=actor(request), queue=queue, conversations=conversations)
    messages.success(request, f"{added} conversation{'s' if added != 1 else ''} added to {queue.name!r}.")
    return HttpResponseRedirect(back)
