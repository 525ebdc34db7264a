"""Saved views pages: save the list's filters and order under a name (from the list page), see one's own views and
the shared ones, share (leads) or stop sharing, and delete. Opening a view is the list's own URL with its filters.

Every reading role keeps views of its own; only leads (and superusers) share one. Each write is a service call
(chats.services.saved_views), audited there, answered with a redirect (Post/Redirect/Get).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.models import SavedView
from chats.selectors.saved_views import saved_views_read, saved_views_visible
from chats.services.saved_views import saved_view_create, saved_view_delete, saved_view_query, saved_view_update
from chats.views.common import actor, reviewer_page, roles_of


class SavedViewForm(forms.Form):
    name = forms.CharField(max_length=200, strip=False)
    query = forms.CharField(required=False, max_length=4000, strip=False)
    shared = forms.BooleanField(required=False)


class ShareForm(forms.Form):
    shared = forms.BooleanField(required=False)


def _form_errors(form: forms.Form) -> InvalidInput:
    return InvalidInput(
        [{"path": f"/{name}", "message": " ".join(map(str, errors))} for name, errors in form.errors.items()]
    )


def _query_or_none(query: str) -> str:
    try:
        return saved_view_query(query)
    except InvalidInput:
        return ""


def _own_view(request: HttpRequest, uuid: str) -> SavedView:
    """One of the person's views, or shared ones (whose changes the service refuses); else 404."""
    view = saved_views_visible(actor(request)).filter(uuid=uuid).first()
    if view is None:
        raise Http404("No such view among yours and the shared ones.")
    return view


@require_GET
@reviewer_page()
def saved_view_list(request: HttpRequest) -> HttpResponse:
    context = {
        "saved_views": saved_views_read(actor(request)),
        "can_share_views": roles_of(request).can_lead,
        "active_nav": "views",
    }
    return render(request, "chats/saved_views.html", context, using="jinja2")


@require_GET
@reviewer_page()
def saved_view_menu(request: HttpRequest) -> HttpResponse:
    """The navigation's "Views" menu: the person's views and the shared ones, as links. Every page's menu loads it
    when first opened (htmx), so that a page pays no query for a menu nobody opens."""
    context = {"saved_views": saved_views_read(actor(request))}
    return render(request, "chats/_saved_view_menu.html", context, using="jinja2")


@require_POST
@reviewer_page()
def saved_view_create_page(request: HttpRequest) -> HttpResponse:
    form = SavedViewForm(request.POST)
    if not form.is_valid():
        raise _form_errors(form)
    try:
        view = saved_view_create(
            actor=actor(request),
            name=form.cleaned_data["name"],
            query=form.cleaned_data["query"],
            shared=form.cleaned_data["shared"],
        )
    except InvalidInput as error:
        # Back to the same list (its filters kept when they are valid), saying why nothing was saved.
        messages.error(request, f"The view was not saved: {' '.join(error.messages)}")
        return redirect(SavedView(query=_query_or_none(form.cleaned_data["query"])).get_absolute_url())
    messages.success(request, f"View “{view.name}” saved{' and shared with the team' if view.shared else ''}.")
    return redirect(view.get_absolute_url())


@require_POST
@reviewer_page()
def saved_view_share(request: HttpRequest, uuid: str) -> HttpResponse:
    form = ShareForm(request.POST)
    if not form.is_valid():
        raise _form_errors(form)
    view = saved_view_update(actor=actor(request), view=_own_view(request, uuid), shared=form.cleaned_data["shared"])
    messages.success(request, f"View “{view.name}” is {'shared with the team' if view.shared else 'yours only'}.")
    return redirect("chats:saved_view_list")


@require_POST
@reviewer_page()
def saved_view_delete_page(request: HttpRequest, uuid: str) -> HttpResponse:
    view = _own_view(request, uuid)
    name = view.name
    saved_view_delete(actor=actor(request), view=view)
    messages.success(request, f"View “{name}” deleted.")
    return redirect("chats:saved_view_list")
