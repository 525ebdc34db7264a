"""Saved views of the conversation list: created, renamed, re-filtered, shared and deleted, each audited.

A view holds the list's query string (its filters and order) as the list page spells it, so opening a view is the
same URL as setting its filters. Its owner changes it; only leads (and superusers) share one with the team.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput, NotAllowed
from chats.filters.conversations import ConversationFilter, conversation_filter_checked
from chats.models import MAX_VIEW_NAME, MAX_VIEW_QUERY, SavedView
from chats.roles import person_roles
from chats.services.audit import audit_record, audit_record_changes, audited_write
from chats.storable import check

# The list's own parameters besides its filters, and the values each may take.
VIEW_EXTRA_KEYS = {"sort": ("oldest",)}


def _values(view: SavedView) -> dict[str, Any]:
    return {"name": view.name, "query": view.query, "shared": view.shared, "owner": view.owner_id}


def saved_view_query(text: str) -> str:
    """The list's filters and order in `text` (a query string, with or without its "?"), checked and in a stable
    order; paging parameters are dropped. Raises InvalidInput naming `/query/<parameter>`."""
    check(text, "/query")
    pairs = [(key, value) for key, value in parse_qsl(text.removeprefix("?"), keep_blank_values=False) if value]
    errors: list[dict[str, str]] = []
    data: dict[str, Any] = {}
    kept: list[tuple[str, str]] = []
    for key, value in pairs:
        if key in ("after", "before", "page"):
            continue
        if key in VIEW_EXTRA_KEYS:
            if value not in VIEW_EXTRA_KEYS[key]:
                errors.append({"path": f"/query/{key}", "message": f"must be one of {', '.join(VIEW_EXTRA_KEYS[key])}"})
            kept.append((key, value))
            continue
        if key not in ConversationFilter.base_filters:
            errors.append({"path": f"/query/{key}", "message": "not a filter of the conversation list"})
            continue
        data.setdefault(key, []).append(value)
        kept.append((key, value))
    if not errors and data:
        _, errors = conversation_filter_checked(
            {key: values[0] if len(values) == 1 else values for key, values in data.items()}, path="/query"
        )
    if errors:
        raise InvalidInput(errors)
    order = {key: index for index, key in enumerate([*ConversationFilter.base_filters, *VIEW_EXTRA_KEYS])}
    query = urlencode(sorted(kept, key=lambda pair: order[pair[0]]))
    if len(query) > MAX_VIEW_QUERY:
        raise InvalidInput([{"path": "/query", "message": f"must be at most {MAX_VIEW_QUERY} characters"}])
    return query


def _name(name: str) -> str:
    check(name, "/name")
    name = name.strip()
    if not name:
        raise InvalidInput([{"path": "/name", "message": "must not be empty"}])
    if len(name) > MAX_VIEW_NAME:
        raise InvalidInput([{"path": "/name", "message": f"must be at most {MAX_VIEW_NAME} characters"}])
    return name


def _may_share(actor: User, shared: bool) -> None:
    if shared and not person_roles(actor).can_lead:
        raise NotAllowed([{"path": "/shared", "message": "Only leads can share a view with the team."}])


def _saved(view: SavedView) -> None:
    """Save, answering a second view of the same name (for the same owner) as a 400 naming the field."""
    try:
        with transaction.atomic():
            view.save()
    except IntegrityError as error:
        if "saved_view_name_unique_per_owner" not in str(error):
            raise
        raise InvalidInput([{"path": "/name", "message": "You already have a view with this name."}]) from error


@audited_write
def saved_view_create(*, actor: User, name: str, query: str, shared: bool = False) -> SavedView:
    _may_share(actor, shared)
    view = SavedView(owner=actor, name=_name(name), query=saved_view_query(query), shared=shared)
    _saved(view)
    audit_record(
        actor=actor,
        action=AuditAction.SAVED_VIEW_CREATED,
        target_type="saved_view",
        target_id=view.pk,
        after=_values(view),
    )
    return view


@audited_write
def saved_view_update(
    *, actor: User, view: SavedView, name: str | None = None, query: str | None = None, shared: bool | None = None
) -> SavedView:
    """Change what is given of a view's name, filters and sharing; its owner only, and only a lead shares."""
    if view.owner_id != actor.pk:
        raise NotAllowed("Only its owner can change a view.")
    before = _values(view)
    if name is not None:
        view.name = _name(name)
    if query is not None:
        view.query = saved_view_query(query)
    if shared is not None and shared != view.shared:
        _may_share(actor, shared)
        view.shared = shared
    after = _values(view)
    if after == before:
        return view
    _saved(view)
    audit_record_changes(
        actor=actor,
        action=AuditAction.SAVED_VIEW_UPDATED,
        target_type="saved_view",
        target_id=view.pk,
        before=before,
        after=after,
    )
    return view


@audited_write
def saved_view_delete(*, actor: User, view: SavedView) -> None:
    if view.owner_id != actor.pk:
        raise NotAllowed("Only its owner can delete a view.")
    before = _values(view)
    pk = view.pk
    view.delete()
    audit_record(
        actor=actor, action=AuditAction.SAVED_VIEW_DELETED, target_type="saved_view", target_id=pk, before=before
    )
