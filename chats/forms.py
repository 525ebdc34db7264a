"""Forms that validate what the review pages post. The thread renders its feedback forms by hand (one label list
for hundreds of messages); these forms only validate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from axes.helpers import get_lockout_message
from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.forms import BaseFormSet

from chats.form_fields import IntegerFormField
from chats.integers import parse_int
from chats.json_types import JSONObject
from chats.models import (
    MAX_LEASE_MINUTES,
    MAX_REVIEWS_PER_ITEM,
    ArtifactKind,
    Label,
    Queue,
    ReviewStatus,
    Score,
    Source,
)
from chats.review.rubric import QUESTION_TYPES, TARGET_ROLES
from chats.selectors.artifacts import (
    ARTIFACT_SORTS,
    DEFAULT_ARTIFACT_SORT,
    MAX_ARTIFACT_PAGE,
    ArtifactFilters,
)
from chats.selectors.conversations import decode_cursor
from chats.selectors.threads import WINDOW_LIMIT_MAX

SCORE_CHOICES = [("", "No score"), *[(str(value), label) for value, label in reversed(Score.choices)]]


class FeedbackForm(forms.Form):
    message = IntegerFormField(required=False, min_value=1)
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
    message = IntegerFormField(min_value=1)
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

    def __init__(self, data: Mapping[str, str]) -> None:
        super().__init__({"from_": data.get("from", "")})


class ThreadForm(forms.Form):
    """GET parameters of the thread page (the list filters it carries are read by ConversationFilter)."""

    at = IntegerFormField(required=False, min_value=1)
    # The window of the path to show (chats.selectors.threads.path_window): after a position, or around a message.
    after = IntegerFormField(required=False, min_value=0, max_value=2**31 - 1)
    around = IntegerFormField(required=False, min_value=1, max_value=2**63 - 1)
    limit = IntegerFormField(required=False, min_value=1, max_value=WINDOW_LIMIT_MAX)
    # The window around the next message past this position (-1: from the start) with an unanswered tool call.
    unanswered_after = IntegerFormField(required=False, min_value=-1, max_value=2**31 - 1)


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
    page = IntegerFormField(required=False, min_value=1, max_value=MAX_ARTIFACT_PAGE)

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


# --------------------------------------------------------------------------------------------------------------
# Team review. These forms translate what a page posts into a service's arguments; the services check the rules
# (chats/review/rubric.py), so the forms repeat none of them.


class ReviewQueueForm(forms.Form):
    """A queue's settings, for queue_create and queue_update (its rubric comes from RubricFormSet)."""

    name = forms.CharField(max_length=200)
    instructions = forms.CharField(
        required=False, max_length=50_000, widget=forms.Textarea(attrs={"rows": 4}), help_text="Markdown."
    )
    reviews_per_item = forms.IntegerField(min_value=1, max_value=MAX_REVIEWS_PER_ITEM, initial=1)
    lease_minutes = forms.IntegerField(min_value=1, max_value=MAX_LEASE_MINUTES, initial=30, required=False)
    members = forms.ModelMultipleChoiceField(
        queryset=User.objects.filter(is_active=True).order_by("username"),
        to_field_name="username",
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )


TARGET_CHOICES = [
    ("conversation", "The whole conversation"),
    *[(f"role:{r}", f"Each {r} message") for r in TARGET_ROLES],
]


def _lines(text: str) -> list[str]:
    """The non-blank lines of a textarea, stripped (browsers send CRLF; only line breaks split)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [line.strip() for line in lines if line.strip()]


def _lines_field(*, help_text: str, label: str | None = None) -> forms.CharField:
    """A list written one entry per line (read by `_lines`): kept as typed, blank lines and spaces included."""
    return forms.CharField(
        required=False,
        max_length=250_000,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=label,
        help_text=help_text,
    )


class RubricQuestionForm(forms.Form):
    """One question of a rubric, in fields that give every question back exactly as stored: options one per line
    (an option may hold commas), and every named point of an ordinal scale, one per line as ``point: name``. A row
    left blank (no key, no prompt) is no question. Rubric rules are the services' (chats/review/rubric.py): an
    option or a label is one line of text there, so that nothing a rubric holds is lost here."""

    key = forms.CharField(required=False, max_length=64)
    prompt = forms.CharField(required=False, max_length=2000)
    type = forms.ChoiceField(choices=[(kind, kind.replace("_", "-")) for kind in QUESTION_TYPES], initial="categorical")
    options = _lines_field(help_text="One option per line (categorical, multi-label).")
    # Text parsed by parse_int (ASCII digits only), shown as number fields.
    scale_min = forms.CharField(required=False, max_length=20, label="Scale from", widget=forms.NumberInput)
    scale_max = forms.CharField(required=False, max_length=20, label="Scale to", widget=forms.NumberInput)
    labels = _lines_field(label="Names of points of the scale", help_text="One per line, as point: name (1: bad).")
    target = forms.ChoiceField(choices=TARGET_CHOICES, initial="conversation")

    def _scale_end(self, name: str) -> int | None:
        text = self.cleaned_data.get(name, "")
        if not text:
            return None
        value = parse_int(text)
        if value is None:
            raise ValidationError("must be an integer in ASCII digits")
        return value

    def clean_scale_min(self) -> int | None:
        return self._scale_end("scale_min")

    def clean_scale_max(self) -> int | None:
        return self._scale_end("scale_max")

    def clean_labels(self) -> dict[str, str]:
        labels: dict[str, str] = {}
        for line in _lines(self.cleaned_data.get("labels", "")):
            point, colon, name = line.partition(":")
            number = parse_int(point.strip())
            if not colon or number is None:
                raise ValidationError(f"{line!r}: write each as point: name, the point in ASCII digits")
            if str(number) in labels:
                raise ValidationError(f"{line!r}: the point {number} is named twice")
            labels[str(number)] = name.strip()
        return labels

    def question(self) -> JSONObject | None:
        data = self.cleaned_data
        if not data.get("key") and not data.get("prompt"):
            return None
        question: JSONObject = {
            "key": data["key"].strip(),
            "prompt": data["prompt"].strip(),
            "type": data["type"],
            "target": data["target"],
        }
        if data["type"] in ("categorical", "multi_label"):
            question["options"] = [*_lines(data["options"])]
        elif data["type"] == "ordinal":
            question["scale"] = {"min": data.get("scale_min"), "max": data.get("scale_max"), "labels": data["labels"]}
        return question

    @staticmethod
    def initial_of(question: dict[str, Any]) -> dict[str, Any]:
        """A stored question as this form's initial data: every option and every named point."""
        scale = question.get("scale") or {}
        labels = scale.get("labels") or {}
        return {
            "key": question["key"],
            "prompt": question["prompt"],
            "type": question["type"],
            "options": "\n".join(question.get("options") or []),
            "scale_min": "" if scale.get("min") is None else str(scale["min"]),
            "scale_max": "" if scale.get("max") is None else str(scale["max"]),
            "labels": "\n".join(f"{point}: {name}" for point, name in labels.items()),
            "target": question.get("target", "conversation"),
        }


RubricFormSet = forms.formset_factory(RubricQuestionForm, extra=2, max_num=50, absolute_max=60)


def rubric_questions(formset: BaseFormSet[RubricQuestionForm]) -> list[JSONObject]:
    """The questions of a valid RubricFormSet, blank rows left out."""
    return [question for form in formset.forms if form.is_valid() and (question := form.question()) is not None]


class RubricAnswersForm(forms.Form):
    """A rubric's answers as a page posts them: ``q.<key>`` for a question about the conversation, and
    ``q.<key>.<message key>`` for one about each message of a role; a multi-label question also posts ``q.<key>!``
    (or ``q.<key>.<message key>!``) so that no label checked reads as the empty list. An unanswered question is
    left out. Values are translated (digits to integers, yes/no to booleans), not judged: the services do that."""

    def __init__(self, questions: list[dict[str, Any]], data: Any) -> None:
        super().__init__(data)
        self.questions = questions

    def _value(self, kind: str, name: str) -> Any:
        if kind == "multi_label":
            values = self.data.getlist(name)  # type: ignore[attr-defined]  # a QueryDict: what pages post
            return values if values or f"{name}!" in self.data else None
        raw = self.data.get(name, "")
        if kind == "text":
            return raw if raw.strip() else None
        if raw == "":
            return None
        if kind == "ordinal":
            number = parse_int(raw)
            return raw if number is None else number
        if kind == "boolean":
            return {"yes": True, "no": False}.get(raw, raw)
        return raw

    def clean(self) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for question in self.questions:
            key, kind = question["key"], question["type"]
            if question.get("target", "conversation") == "conversation":
                value = self._value(kind, f"q.{key}")
                if value is not None:
                    answers[key] = value
                continue
            prefix = f"q.{key}."
            message_keys = {name[len(prefix) :].removesuffix("!") for name in self.data if name.startswith(prefix)}
            per_message = {m: v for m in sorted(message_keys) if (v := self._value(kind, prefix + m)) is not None}
            if per_message:
                answers[key] = per_message
        return {"answers": answers}


class ItemLeadForm(forms.Form):
    """A lead's assignment or release of an item: the item (by its number in the queue) and the reviewer."""

    item = IntegerFormField(min_value=1)
    reviewer = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True), to_field_name="username", required=False
    )
    action = forms.ChoiceField(choices=[("assign", "Assign"), ("release", "Release")])


class CorrectionForm(forms.Form):
    """The final correction of a lead's resolution."""

    correction = forms.CharField(required=False, max_length=100_000, strip=False)


class UUIDListField(forms.Field):
    """Any number of uuids (the list page's selected rows)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Iterable[object] | None) -> list[UUID]:
        return [forms.UUIDField().clean(each) for each in value or []]


class AddToQueueForm(forms.Form):
    """The list page's "Add to queue": the queue, and either the current filters' conversations or the rows
    selected (their uuids)."""

    queue = forms.ModelChoiceField(queryset=Queue.objects.all())
    scope = forms.ChoiceField(
        choices=[("filters", "Every conversation matching the filters"), ("selected", "The selected rows")]
    )
    selected = UUIDListField(required=False)


class _LockoutExplained:
    """Says why a locked-out sign-in failed. django-axes decides (chats/throttling.py): it refuses to check the
    password of a user name locked from this address, and marks the request; its middleware answers 429."""

    request: Any

    def clean(self) -> dict[str, object]:
        try:
            cleaned: dict[str, object] = super().clean()  # type: ignore[misc]
        except ValidationError:
            if getattr(self.request, "axes_locked_out", False):
                raise ValidationError(get_lockout_message(), code="throttled") from None
            raise
        return cleaned


class SignInForm(_LockoutExplained, AuthenticationForm):
    pass


class AdminSignInForm(_LockoutExplained, AdminAuthenticationForm):
    pass
