"""The team review pages of one item: reviewing it with its rubric (a draft, then the submitted review), and the
queue's adjudication, where leads resolve the reviewed items. The queue pages and what they share are in
`chats.views.review`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.forms import CorrectionForm, RubricAnswersForm
from chats.jinja2 import qs_join
from chats.models import QueueItem, Review, ReviewState
from chats.review.rubric import consensus, disagreements
from chats.selectors.review import current_rubric, item_reviews, queue_adjudication_page, queue_item, queue_visible
from chats.services import review as review_services
from chats.services.reads import thread_open
from chats.views.common import actor, is_htmx, reviewer_page, roles_of
from chats.views.review import (
    STATE_CHOICES,
    ItemListForm,
    bad_query,
    form_errors,
    input_errors,
    item_list_query,
    lead_roles,
)

ADJUDICATION_SHOWN = 20  # reviewed items per page on the adjudication page (each shows its reviews)


# --------------------------------------------------------------------------------------------------------------
# Reviewing one item


def _targets(questions: list[dict[str, Any]], thread_messages: list[Any]) -> dict[str, list[tuple[str, str]]]:
    """For each question about the messages of a role: (message key, what to call it) of those messages."""
    targets: dict[str, list[tuple[str, str]]] = {}
    for question in questions:
        target = question.get("target", "conversation")
        if target.startswith("role:"):
            role = target[5:]
            targets[question["key"]] = [
                (each.message.key, f"message #{each.message.position + 1}")
                for each in thread_messages
                if each.message.role == role
            ]
    return targets


@require_GET
@reviewer_page()
def review_page(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    roles = roles_of(request)
    queue = queue_visible(request.user, roles, pk, detail=True)
    found = queue_item(queue, item)
    conversation = found.conversation
    data = thread_open(conversation, viewer=request.user)  # records the view
    visible = item_reviews(found, request.user, roles)
    own = next((review for review in visible.reviews if review.reviewer_id == request.user.pk), None)
    others = [review for review in visible.reviews if review is not own]
    is_member = any(member.pk == request.user.pk for member in queue.members.all())
    submitted = own is not None and own.state == ReviewState.SUBMITTED
    rubric = own.rubric_version if submitted and own is not None else queue.rubric_versions.all()[0]
    return render(
        request,
        "chats/queue_item.html",
        {
            "queue": queue,
            "item": found,
            "conversation": conversation,
            "thread": data,
            "questions": rubric.questions,
            "targets": _targets(rubric.questions, data.messages),
            "own": own,
            "answers": own.answers if own is not None else {},
            "others": others,
            "hidden": visible.hidden,
            "editable": is_member and not submitted,
            "submitted": submitted,
            # The thread's own feedback forms stay on the thread page: here the rubric is the review.
            "can_write": False,
            "urls": {},
            "list_query": "",
            "thread_query": "",
            "open_feedback": "",
            "next_url": request.path,
            "active_nav": "queues",
        },
        using="jinja2",
    )


def _item_of(request: HttpRequest, pk: int, item: int) -> QueueItem:
    return queue_item(queue_visible(request.user, roles_of(request), pk), item)


def _answers_form(request: HttpRequest, found: QueueItem) -> RubricAnswersForm:
    """The posted answers to the item's queue's current rubric, cleaned (the services check them)."""
    form = RubricAnswersForm(current_rubric(found.queue).questions, request.POST)
    form.is_valid()
    return form


@require_POST
@reviewer_page()
def review_draft(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    """Save the answers so far (review_save_draft). htmx gets the live region's new words, a form post a redirect."""
    found = _item_of(request, pk, item)
    form = _answers_form(request, found)
    try:
        review_services.review_save_draft(reviewer=actor(request), item=found, answers=form.cleaned_data["answers"])
    except InvalidInput as invalid:
        text = "Draft not saved: " + "; ".join(input_errors(invalid))
        if is_htmx(request):
            return HttpResponse(text, content_type="text/plain; charset=utf-8")
        messages.error(request, text)
        return redirect("chats:queue_item", pk=pk, item=found.pk)
    text = f"Draft saved at {timezone.localtime():%H:%M:%S}."
    if is_htmx(request):
        return HttpResponse(text, content_type="text/plain; charset=utf-8")
    messages.success(request, text)
    return redirect("chats:queue_item", pk=pk, item=found.pk)


@require_POST
@reviewer_page()
def review_submit(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    """Submit the review, once (review_submit). Refused answers are kept as a draft."""
    found = _item_of(request, pk, item)
    form = _answers_form(request, found)
    answers = form.cleaned_data["answers"]
    try:
        review_services.review_submit(reviewer=actor(request), item=found, answers=answers)
    except InvalidInput as invalid:
        for error in input_errors(invalid):
            messages.error(request, f"Not submitted: {error}")
        # Unless already submitted, or answers a draft cannot hold either: the errors above say why.
        with contextlib.suppress(InvalidInput):
            review_services.review_save_draft(reviewer=actor(request), item=found, answers=answers)
        return redirect("chats:queue_item", pk=pk, item=found.pk)
    messages.success(request, "Review submitted. The other reviewers' answers are shown below.")
    return redirect("chats:queue_item", pk=pk, item=found.pk)


# --------------------------------------------------------------------------------------------------------------
# Adjudication


@require_GET
@reviewer_page()
def queue_adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    """The reviewed items, those with disagreements first, each with its reviews side by side; leads resolve."""
    roles = roles_of(request)
    if not roles.can_oversee:
        raise PermissionDenied
    try:
        state, page = item_list_query(request)
    except InvalidInput as invalid:
        return bad_query(invalid)
    queue = queue_visible(request.user, roles, pk, detail=True)
    questions = queue.rubric_versions.all()[0].questions
    listing = queue_adjudication_page(queue, questions, state=state, page=page, size=ADJUDICATION_SHOWN)
    rows = []
    for each in listing.items:
        submitted: list[Review] = each.submitted  # type: ignore[attr-defined]  # prefetched by queue_adjudication
        answer_sets = [review.answers for review in submitted]
        resolution = getattr(each, "resolution", None)
        targets: dict[str, list[tuple[str, str]]] = {}
        for question in questions:
            if question.get("target", "conversation") != "conversation":
                keys = sorted({k for answers in answer_sets for k in (answers.get(question["key"]) or {})})
                targets[question["key"]] = [(key, f"message {key}") for key in keys]
        rows.append(
            {
                "item": each,
                "reviews": submitted,
                "disagree": disagreements(questions, answer_sets),
                "resolution": resolution,
                "answers": resolution.answers if resolution is not None else consensus(questions, answer_sets),
                "targets": targets,
            }
        )
    # Those with a disagreement come first, then oldest first: the page's order (queue_adjudication_page).
    return render(
        request,
        "chats/queue_adjudicate.html",
        {
            "queue": queue,
            "questions": questions,
            "rows": rows,
            "listing": listing,
            "states": STATE_CHOICES,
            "state": state or "",
            "can_lead": roles.can_lead,
            "active_nav": "queues",
        },
        using="jinja2",
    )


@require_POST
@reviewer_page()
def item_resolve(request: HttpRequest, pk: int, item: int) -> HttpResponse:
    roles = lead_roles(request)
    found = queue_item(queue_visible(request.user, roles, pk), item)
    form = _answers_form(request, found)
    correction = CorrectionForm(request.POST)
    if not correction.is_valid():
        for error in form_errors(correction):
            messages.error(request, error)
    else:
        try:
            review_services.item_resolve(
                actor=actor(request),
                item=found,
                answers=form.cleaned_data["answers"],
                correction=correction.cleaned_data["correction"],
            )
            messages.success(request, f"Item {found.pk} resolved.")
        except InvalidInput as invalid:
            for error in input_errors(invalid):
                messages.error(request, f"Item {found.pk} not resolved: {error}")
    back = _list_query_of(request.POST)
    return HttpResponseRedirect(reverse("chats:queue_adjudicate", args=[pk]) + back + f"#item-{found.pk}")


def _list_query_of(params: Any) -> str:
    """The list's state and page a form was posted from (its hidden fields), as a query string: the page returns
    to where the lead was."""
    form = ItemListForm(params)
    if not form.is_valid():
        return ""
    return qs_join(
        "", state=form.cleaned_data["state"], page=form.cleaned_data["page"] if form.cleaned_data["page"] > 1 else None
    )
