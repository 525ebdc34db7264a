"""Feedback on a message or a conversation (save, the form, delete) and a conversation's review status.

Writes answer an htmx request with the re-rendered partial, and a plain form post with a redirect back to the same
place (the page's query string, so the list filters, and the message's anchor).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.forms import FeedbackForm, ReviewStatusForm
from chats.integers import parse_int
from chats.models import Conversation, Feedback, Label, Message
from chats.selectors.feedback import feedback_for_target
from chats.services import feedback as feedback_services
from chats.services import review as review_services
from chats.views.common import actor, feedback_urls, is_htmx, reviewer_page, with_anchor


def _safe_next(request: HttpRequest, candidate: str | None, fallback: str) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return fallback


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
            "urls": feedback_urls(conversation),
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
    if is_htmx(request):
        return _feedback_block(request, conversation, message, errors=errors, next_url=next_url, saved=not errors)
    if errors:
        for error in errors:
            messages.error(request, error)
    else:
        messages.success(request, "Feedback saved.")
    anchor = f"m-{message.pk}" if message else "conversation-feedback"
    return HttpResponseRedirect(with_anchor(next_url, anchor))


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
            feedback_services.feedback_update(actor=actor(request), feedback=feedback, **values)
        else:
            feedback_services.feedback_submit(
                author=actor(request),
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
    feedback_services.feedback_delete(actor=actor(request), feedback=feedback)
    next_url = _safe_next(request, request.POST.get("next"), conversation.get_absolute_url())
    if is_htmx(request):
        return _feedback_block(request, conversation, message, next_url=next_url)
    messages.success(request, "Feedback deleted.")
    return HttpResponseRedirect(with_anchor(next_url, f"m-{message.pk}" if message else "conversation-feedback"))


@require_POST
@reviewer_page(write=True)
def review_status(request: HttpRequest, uuid: str) -> HttpResponse:
    conversation = get_object_or_404(Conversation, uuid=uuid)
    form = ReviewStatusForm(request.POST)
    next_url = _safe_next(request, request.POST.get("next"), conversation.get_absolute_url())
    if not form.is_valid():
        return HttpResponse("Unknown review status.", status=400)
    review_services.conversation_set_review_status(
        actor=actor(request),
        conversation=conversation,
        status=form.cleaned_data["status"],
    )
    if is_htmx(request):
        return render(
            request,
            "chats/_review_status.html",
            {"conversation": conversation, "can_write": True, "next_url": next_url, "saved": True},
            using="jinja2",
        )
    messages.success(request, f"Marked {conversation.get_review_status_display().lower()}.")
    return HttpResponseRedirect(with_anchor(next_url, "review-status"))
