"""The artifact pages: every artifact id seen, and one artifact's payloads, conversations and diffs."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chats.db_router import replica_lag_tolerated
from chats.forms import ArtifactListForm, VersionDiffForm
from chats.selectors.artifact_versions import (
    PayloadVersion,
    artifact_versions,
    listed_only_conversations,
    payload_diff,
)
from chats.selectors.artifacts import ARTIFACT_SORTS, ArtifactFilters, artifact_page, artifact_summaries_of
from chats.views.common import reviewer_page


@replica_lag_tolerated
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


@replica_lag_tolerated
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
