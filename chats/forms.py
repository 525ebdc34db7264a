"""Forms that validate what the review pages post. The thread renders its feedback forms by hand (one label list
for hundreds of messages); these forms only validate."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from axes.helpers import get_lockout_message
from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from chats.models import ArtifactKind, Label, ReviewStatus, Score, Source
from chats.selectors.artifacts import (
    ARTIFACT_SORTS,
    DEFAULT_ARTIFACT_SORT,
    MAX_ARTIFACT_PAGE,
    ArtifactFilters,
)
from chats.selectors.conversations import decode_cursor

SCORE_CHOICES = [("", "No score"), *[(str(value), label) for value, label in reversed(Score.choices)]]


class FeedbackForm(forms.Form):
    message = forms.IntegerField(required=False, min_value=1)
    feedback = forms.UUIDField(required=False)  # the reviewer's own feedback being changed, when there is one
    score = forms.TypedChoiceField(choices=SCORE_CHOICES, coerce=int, empty_value=None, required=False)
    labels = forms.ModelMultipleChoiceField(queryset=Label.objects.all(), to_field_name="name", required=False)
    comment = forms.CharField(required=False, max_length=10_000, strip=True)
    correction = forms.CharField(required=False, max_length=100_000, strip=False)
    next = forms.CharField(required=False, max_length=4000)


class ReviewStatusForm(forms.Form):
    status = forms.ChoiceField(choices=ReviewStatus.choices)
    next = forms.CharField(required=False, max_length=4000)


class BranchForm(forms.Form):
    message = forms.IntegerField(min_value=1)
    next = forms.CharField(required=False, max_length=4000)


class ListPageForm(forms.Form):
    """GET parameters of the list page besides its filters: the order and a cursor (either way). A cursor this
    site did not give out is dropped, and the page starts from the top."""

    sort = forms.ChoiceField(choices=[("newest", "Newest first"), ("oldest", "Oldest first")], required=False)
    after = forms.CharField(required=False, max_length=200)
    before = forms.CharField(required=False, max_length=200)

    def values(self) -> tuple[bool, str | None, str | None]:
        """(oldest first, after, before), each cursor only if it is one."""
        data = self.cleaned_data if self.is_valid() else {}
        cursors = [data.get(name) or None for name in ("after", "before")]
        after, before = (cursor if cursor and decode_cursor(cursor) else None for cursor in cursors)
        return data.get("sort") == "oldest", after, before


class QueueForm(forms.Form):
    """GET parameters of "next unreviewed": the conversation the reviewer comes from, if any."""

    from_ = forms.UUIDField(required=False)

    def __init__(self, data: Any) -> None:
        super().__init__({"from_": data.get("from", "")})


class ThreadForm(forms.Form):
    """GET parameters of the thread page (the list filters it carries are read by ConversationFilter)."""

    at = forms.IntegerField(required=False, min_value=1)


class ArtifactListForm(forms.Form):
    """GET parameters of the artifact list (and of its export): kind, source, order and page. A parameter that is
    not valid is reported and left out; the others still apply."""

    kind = forms.ChoiceField(choices=[("", "Any kind"), *ArtifactKind.choices], required=False, label="Kind")
    source = forms.ModelChoiceField(
        queryset=Source.objects.all(), to_field_name="name", required=False, label="Source", empty_label="Any source"
    )
    sort = forms.ChoiceField(
        choices=[(key, label) for key, (label, _) in ARTIFACT_SORTS.items()], required=False, label="Order"
    )
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_ARTIFACT_PAGE)

    def selection(self) -> tuple[ArtifactFilters, str, int]:
        """(filters, order, page number) from the valid parameters."""
        self.is_valid()  # keeps the valid fields in cleaned_data
        data: dict[str, Any] = getattr(self, "cleaned_data", {})
        filters = ArtifactFilters(source=data.get("source"), kind=data.get("kind") or None)
        return filters, data.get("sort") or DEFAULT_ARTIFACT_SORT, data.get("page") or 1

    def query(self) -> str:
        """The valid filters and order as a query string (without the page), for the pager and the export."""
        filters, sort, _ = self.selection()
        pairs = [
            ("kind", filters.kind or ""),
            ("source", filters.source.name if filters.source else ""),
            ("sort", sort if sort != DEFAULT_ARTIFACT_SORT else ""),
        ]
        return urlencode([(key, value) for key, value in pairs if value])


class VersionDiffForm(forms.Form):
    """GET parameters of an artifact page: the two payload versions to compare (their digests, or a prefix)."""

    old = forms.RegexField(regex=r"^[0-9a-f]{1,64}$", required=False)
    new = forms.RegexField(regex=r"^[0-9a-f]{1,64}$", required=False)


class _LockoutExplained:
    """Says why a locked-out sign-in failed. django-axes decides (chats/throttling.py): it refuses to check the
    password of a user name locked from this address, and marks the request; its middleware answers 429."""

    request: Any

    def clean(self) -> dict[str, Any]:
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            if getattr(self.request, "axes_locked_out", False):
                raise ValidationError(get_lockout_message(), code="throttled") from None
            raise
        return cleaned


class SignInForm(_LockoutExplained, AuthenticationForm):
    pass


class AdminSignInForm(_LockoutExplained, AdminAuthenticationForm):
    pass
