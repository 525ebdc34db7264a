"""The conversation filters, shared by the review pages, the API and the export command (one set of query
parameters for all), and the check of a saved set of them (a queue rule's, a saved view's).

Filters on related tables use EXISTS (or IN) subqueries, never joins, so a conversation appears once whatever
matches, and the list keeps its (last_activity_at, id) order and index.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import django_filters
from django import forms
from django.contrib.auth.models import User
from django.db import connection, models
from django.db.models import Exists, OuterRef, Q, QuerySet

from chats.filters import model_calls
from chats.filters.fields import (
    AliasedChoiceFilter,
    DayFilter,
    SearchFilter,
    StorableFilterForm,
    StrictBooleanFilter,
    on_or_after,
    on_or_before,
)
from chats.filters.model_setting import ModelSettingFilter
from chats.models import (
    ArtifactKind,
    ContextArtifactId,
    Conversation,
    Feedback,
    FeedbackLabel,
    FeedbackOrigin,
    InjectedArtifact,
    InputFormat,
    Label,
    Message,
    Queue,
    Review,
    ReviewState,
    ReviewStatus,
    Score,
    Source,
    ToolCall,
)
from chats.roles import person_roles, request_roles
from chats.selectors.filter_choices import offered_choices
from chats.selectors.search import BoundedCount, full_text_matches
from chats.storable import pointer_token, unstorable

# ?policy=: what a conversation's injections were against its injection context (chats.ingest.policy).
POLICY_CHOICES = [
    ("violation", "Policy violation"),
    ("permitted", "Every injection permitted"),
    ("no_context", "No injection context"),
]
_POLICY_VIOLATION = {"violation": True, "permitted": False, "no_context": None}
# Earlier spellings still accepted (and answered as the new one).
_POLICY_ALIASES = {"clean": "permitted"}


# ?has_warnings=: what ingestion accepted and flagged on a conversation's rows (design notes §3: "accept and flag").
# Ingestion decides each flag, once, as it stores the row (the thread page shows the same flags next to the row);
# a filter only reads them, each through a partial index over the flagged rows (see chats.models).
class WarningKind(models.TextChoices):
    UNANSWERED_CALL = "unanswered_call", "Unanswered tool call"
    ORPHAN_RESULT = "orphan_result", "Orphan tool result"
    INVALID_ARGUMENTS = "invalid_arguments", "Tool arguments not valid JSON"
    MALFORMED_ARTIFACT_ID = "malformed_artifact_id", "Malformed artifact id (injected or in the context)"
    POLICY_VIOLATION = "policy_violation", "Injection policy violation"


ANY_WARNING = "any"
WARNING_CHOICES = [(ANY_WARNING, "Any warning"), *WarningKind.choices]


def warned_conversation_ids(kind: str) -> list[QuerySet[Any]]:
    """The ids of the conversations with a warning of ``kind``, as queries over the flagged rows alone."""
    if kind == WarningKind.UNANSWERED_CALL:
        return [ToolCall.objects.filter(result_message__isnull=True).values("conversation_id")]
    if kind == WarningKind.ORPHAN_RESULT:
        return [Message.objects.filter(is_orphan_result=True).values("conversation_id")]
    if kind == WarningKind.INVALID_ARGUMENTS:
        return [ToolCall.objects.exclude(arguments_error="").values("conversation_id")]
    if kind == WarningKind.MALFORMED_ARTIFACT_ID:
        return [
            InjectedArtifact.objects.filter(id_well_formed=False).values("conversation_id"),
            ContextArtifactId.objects.filter(id_well_formed=False).values("conversation_id"),
        ]
    if kind == WarningKind.POLICY_VIOLATION:
        return [Conversation.objects.filter(policy_violation=True).values("id")]
    raise ValueError(f"not a warning kind: {kind}")


def submitted_reviews_seen_by(reader: User | None, *, oversees: bool | None = None) -> QuerySet[Review]:
    """The submitted reviews whose reviewer ``reader`` may know of: every one for leads and auditors, those of the
    queues they work for for the other people, none for no person (a source's key). ``oversees`` is the reader's
    ``can_oversee`` when the caller knows it already (a request's roles); else it is read."""
    reviews = Review.objects.filter(state=ReviewState.SUBMITTED)
    if not isinstance(reader, User):
        return reviews.none()
    if person_roles(reader).can_oversee if oversees is None else oversees:
        return reviews
    return reviews.filter(item__queue__in=Queue.objects.filter(members=reader))


def submitted_reviews_seen(request: object) -> QuerySet[Review]:
    """The submitted reviews a request's caller may know of (submitted_reviews_seen_by), or every one without a
    request: a command, a lead's queue rule."""
    if request is None:
        return Review.objects.filter(state=ReviewState.SUBMITTED)
    user = getattr(request, "user", None)
    if not isinstance(user, User):
        return submitted_reviews_seen_by(None)
    return submitted_reviews_seen_by(user, oversees=request_roles(request).can_oversee)


# ConversationFilter's reader when none is given: the request's caller (every review without a request).
_FROM_REQUEST: Any = object()


class ConversationFilter(django_filters.FilterSet):
    """Query parameters: source, model, user, date_from, date_to, format, role, has_tool_calls, tool_name,
    artifact_id, artifact_kind, policy, workflow, has_warnings, feedback_origin, model_setting, status, score, label,
    reviewed_by, reviewed_from, reviewed_to, q."""

    source = django_filters.ModelChoiceFilter(
        queryset=Source.objects.all(), to_field_name="name", label="Source", empty_label="Any source"
    )
    model = django_filters.CharFilter(field_name="model_name", label="Model")
    user = django_filters.CharFilter(field_name="user_external_id", label="User")
    date_from = DayFilter(method="filter_date_from", label="From")
    date_to = DayFilter(method="filter_date_to", label="To")
    format = django_filters.ChoiceFilter(
        field_name="input_format", choices=InputFormat.choices, label="Format", empty_label="Any format"
    )
    role = django_filters.CharFilter(method="filter_role", label="Has a message with role")
    has_tool_calls = StrictBooleanFilter(
        method="filter_has_tool_calls",
        label="Tool calls",
        help_text="`true` or `false` (or `1` or `0`).",
    )
    tool_name = django_filters.CharFilter(method="filter_tool_name", label="Tool name")
    # The Trends page's tool health points: a warning of one tool's own calls (has_warnings with tool_name would
    # also list a conversation whose unanswered call is of another tool).
    unanswered_tool = django_filters.CharFilter(
        method="filter_unanswered_tool", label="Unanswered call of tool", help_text="A tool's name, exactly."
    )
    invalid_arguments_tool = django_filters.CharFilter(
        method="filter_invalid_arguments_tool",
        label="Invalid arguments to tool",
        help_text="A tool's name, exactly: conversations with a call of it whose arguments are not valid JSON.",
    )
    artifact_id = django_filters.CharFilter(
        method="filter_artifact_id", label="Artifact id (injected or listed in the context)"
    )
    artifact_kind = django_filters.ChoiceFilter(
        method="filter_artifact_kind", choices=ArtifactKind.choices, label="Artifact kind", empty_label="Any kind"
    )
    policy = AliasedChoiceFilter(
        method="filter_policy",
        choices=POLICY_CHOICES,
        aliases=_POLICY_ALIASES,
        label="Injection policy",
        empty_label="Any policy",
        help_text=(
            "violation: an injection was not permitted by the Record QA context; permitted: every injection was "
            "(`clean` is accepted too); no_context: the conversation has no injection context, so nothing is judged."
        ),
    )
    workflow = django_filters.CharFilter(
        field_name="workflow",
        label="Workflow",
        help_text=(
            "The scenario's workflow, exactly: its `workflow`, else its `name`, or the scenario itself when it is "
            "a string."
        ),
    )
    has_warnings = django_filters.MultipleChoiceFilter(
        method="filter_has_warnings",
        choices=WARNING_CHOICES,
        label="Has warnings",
        help_text=(
            "Conversations with a warning of any of the kinds given (repeat the parameter for several; `any`: of "
            "any kind): unanswered_call (a tool call no tool message answers), orphan_result (a tool result whose "
            "id matches no call), invalid_arguments (tool call arguments that are not valid JSON), "
            "malformed_artifact_id (an injected id, or one the context lists, off its kind's id scheme), "
            "policy_violation (an injection the context did not permit)."
        ),
    )
    feedback_origin = django_filters.ChoiceFilter(
        method="filter_feedback_origin",
        choices=FeedbackOrigin.choices,
        label="Feedback from",
        empty_label="Any origin",
        help_text="Conversations with feedback of this origin (a reviewer's, or imported with the data).",
    )
    model_setting = ModelSettingFilter(
        method="filter_model_setting",
        label="Model setting",
        help_text=(
            "key=value: conversations whose model as given has this setting, for example enable_thinking=true. "
            "The value is read as JSON when it is JSON (true, false, numbers, null, a quoted string), otherwise "
            "as a string."
        ),
    )
    status = django_filters.ChoiceFilter(
        field_name="review_status", choices=ReviewStatus.choices, label="Review status", empty_label="Any status"
    )
    score = django_filters.ChoiceFilter(
        method="filter_score",
        choices=[(str(value), label) for value, label in reversed(Score.choices)],
        label="Feedback score",
        empty_label="Any score",
    )
    label = django_filters.ModelChoiceFilter(
        queryset=Label.objects.all(),
        to_field_name="name",
        method="filter_label",
        label="Feedback label",
        empty_label="Any label",
    )
    # The Trends page's team review: conversations with a review submitted by this reviewer (user name, exactly)
    # between these days (UTC, inclusive), all three read together as one condition on the same review (filter_queryset).
    reviewed_by = django_filters.CharFilter(
        method="filter_reviewed",
        label="Reviewed by",
        help_text=(
            "A reviewer's user name, exactly: conversations with a review they submitted (in reviewed_from to "
            "reviewed_to when given). A reviewer counts only the reviews of the queues they work for."
        ),
    )
    reviewed_from = DayFilter(
        method="filter_reviewed",
        label="Reviewed from",
        help_text="Conversations with a review submitted on or after this day (UTC), by reviewed_by when given.",
    )
    reviewed_to = DayFilter(
        method="filter_reviewed",
        label="Reviewed to",
        help_text="Conversations with a review submitted on or before this day (UTC), by reviewed_by when given.",
    )
    q = SearchFilter(method="filter_search", label="Search message text")
    # Model calls reported by instrumented applications (OpenTelemetry): chats/model_calls.py.
    provider = django_filters.CharFilter(method=model_calls.filter_provider, label="Model provider")
    tokens_min = model_calls.TokenCountFilter(method=model_calls.filter_tokens_min, label="Tokens at least")
    tokens_max = model_calls.TokenCountFilter(method=model_calls.filter_tokens_max, label="Tokens at most")

    # How many conversations a search (?q=) matched, once the list is read (PostgreSQL; None otherwise).
    search_count: BoundedCount | None = None

    class Meta:
        model = Conversation
        fields: list[str] = []
        form = StorableFilterForm

    def __init__(
        self,
        data: Any = None,
        queryset: QuerySet[Conversation] | None = None,
        *,
        request: Any = None,
        prefix: str | None = None,
        reader: User | None = _FROM_REQUEST,
    ) -> None:
        """``reader``: whose reviews ``reviewed_by`` may name when there is no request (a bulk export's or an export
        job's person; None for a source's key, which may name none)."""
        super().__init__(data, queryset, request=request, prefix=prefix)
        self.reader = reader
        # The sources offered and accepted are those of the conversations the caller may read (``queryset`` is
        # scoped to the caller): another source's name answers exactly as a name that does not exist.
        self.filters["source"].queryset = Source.objects.filter(
            Exists(self.queryset.order_by().filter(source=OuterRef("pk")))
        ).order_by("name")

    def offer_cached_choices(self) -> None:
        """Have the form offer the cached sources and labels (offered_choices): for a person, who reads every
        source. The choices a field accepts stay read from the database."""
        for name, names in offered_choices().items():
            field = self.form.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            # Django's own setter: django-filter's would wrap the list in a model iterator, which reads the table.
            choices = [("", field.empty_label or ""), *((value, value) for value in names)]
            choices_property: property = vars(forms.ChoiceField)["choices"]
            choices_property.__set__(field, choices)

    def filter_date_from(self, queryset: QuerySet[Conversation], name: str, value: dt.date) -> QuerySet[Conversation]:
        return queryset.filter(on_or_after("last_activity_at", value))

    def filter_date_to(self, queryset: QuerySet[Conversation], name: str, value: dt.date) -> QuerySet[Conversation]:
        return queryset.filter(on_or_before("last_activity_at", value))

    def filter_reviewed(self, queryset: QuerySet[Conversation], name: str, value: object) -> QuerySet[Conversation]:
        return queryset  # read together in filter_queryset: one review must match all three

    def filter_queryset(self, queryset: QuerySet[Conversation]) -> QuerySet[Conversation]:
        # The review condition first, so that a search counts its matches among these conversations.
        cleaned = self.form.cleaned_data
        reviewer, since, until = cleaned.get("reviewed_by"), cleaned.get("reviewed_from"), cleaned.get("reviewed_to")
        if reviewer or since or until:
            if self.reader is _FROM_REQUEST:
                reviews = submitted_reviews_seen(self.request)
            else:
                reviews = submitted_reviews_seen_by(self.reader)
            if reviewer:
                reviews = reviews.filter(reviewer__username=reviewer)
            if since:
                reviews = reviews.filter(on_or_after("submitted_at", since))
            if until:
                reviews = reviews.filter(on_or_before("submitted_at", until))
            queryset = queryset.filter(id__in=reviews.values("conversation_id"))
        result: QuerySet[Conversation] = super().filter_queryset(queryset)
        return result

    def filter_role(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(Exists(Message.objects.filter(conversation=OuterRef("pk"), role=value)))

    def filter_has_tool_calls(
        self, queryset: QuerySet[Conversation], name: str, value: bool | None
    ) -> QuerySet[Conversation]:
        if value is None:
            return queryset
        return queryset.filter(tool_call_count__gt=0) if value else queryset.filter(tool_call_count=0)

    def filter_tool_name(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(Exists(ToolCall.objects.filter(conversation=OuterRef("pk"), name=value)))

    def filter_unanswered_tool(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(
            id__in=ToolCall.objects.filter(result_message__isnull=True, name=value).values("conversation_id")
        )

    def filter_invalid_arguments_tool(
        self, queryset: QuerySet[Conversation], name: str, value: str
    ) -> QuerySet[Conversation]:
        calls = ToolCall.objects.filter(name=value).exclude(arguments_error="")
        return queryset.filter(id__in=calls.values("conversation_id"))

    def filter_artifact_id(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        # Injected, or only listed by the context (permitted, perhaps never used), each read by its id's index.
        # One IN over both tables rather than two EXISTS joined by OR: PostgreSQL joins the few matches to the
        # conversations (a semi-join), where an OR of EXISTS would test every conversation of the list in turn.
        injected = InjectedArtifact.objects.filter(artifact_id=value).values("conversation_id")
        listed = ContextArtifactId.objects.filter(artifact_id=value).values("conversation_id")
        return queryset.filter(id__in=injected.union(listed, all=True))

    def filter_artifact_kind(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(Exists(InjectedArtifact.objects.filter(conversation=OuterRef("pk"), kind=value)))

    def filter_policy(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        violation = _POLICY_VIOLATION[value]
        if violation is None:
            return queryset.filter(policy_violation__isnull=True)
        return queryset.filter(policy_violation=violation)

    def filter_has_warnings(
        self, queryset: QuerySet[Conversation], name: str, value: list[str]
    ) -> QuerySet[Conversation]:
        kinds = list(WarningKind) if ANY_WARNING in value else [WarningKind(kind) for kind in value]
        if not kinds:
            return queryset
        # One IN over the flagged rows of every kind asked (see filter_artifact_id): the few conversations they
        # name are joined to the list, rather than every conversation of the list tested against each kind.
        first, *others = [ids.order_by() for kind in kinds for ids in warned_conversation_ids(kind)]
        return queryset.filter(id__in=first.union(*others, all=True) if others else first)

    def filter_feedback_origin(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(Exists(Feedback.objects.filter(conversation=OuterRef("pk"), origin=value)))

    def filter_model_setting(
        self, queryset: QuerySet[Conversation], name: str, value: tuple[str, Any] | None
    ) -> QuerySet[Conversation]:
        if value is None:
            return queryset
        key, setting = value
        if connection.vendor == "postgresql":
            # JSON containment, served by the GIN index over model_config (migration 0010).
            return queryset.filter(model_config__contains={key: setting})
        # SQLite has no containment: the key's value, of the same JSON type and equal (true is not "true" nor 1).
        if '"' in key or "\\" in key:
            return queryset.none()  # a path SQLite cannot quote: no such setting in any conversation it stores
        path, literal = f'$."{key}"', json.dumps(setting)
        return queryset.extra(
            where=[
                "json_type(chats_conversation.model_config, %s) = json_type(%s) "
                "AND json_extract(chats_conversation.model_config, %s) IS json_extract(%s, '$')"
            ],
            params=[path, literal, path, literal],
        )

    def filter_score(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        return queryset.filter(Exists(Feedback.objects.filter(conversation=OuterRef("pk"), score=int(value))))

    def filter_label(self, queryset: QuerySet[Conversation], name: str, value: Label) -> QuerySet[Conversation]:
        return queryset.filter(Exists(FeedbackLabel.objects.filter(conversation=OuterRef("pk"), label=value)))

    def filter_search(self, queryset: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        value = value.strip()
        if not value:
            return queryset
        if connection.vendor == "postgresql":
            found, self.search_count = full_text_matches(queryset, value)
            return found
        return queryset.filter(
            Exists(Message.objects.filter(conversation=OuterRef("pk"), text__icontains=value))
            | Q(title__icontains=value)
        )

    def active_filters(self) -> dict[str, Any]:
        """The valid, non-empty filter values, by parameter name (for display and the audit of exports)."""
        if not self.is_valid():
            return {}
        return {key: value for key, value in self.form.cleaned_data.items() if value not in (None, "", [])}

    def given_filters(self) -> dict[str, Any]:
        """The non-empty filters as the request spelled them (strings), for the audit trail."""
        given = {name: self.data.get(name) for name in self.filters}
        return {name: value for name, value in given.items() if value not in (None, "")}


def conversation_filter_checked(
    data: Any, *, path: str = "/filters"
) -> tuple[ConversationFilter | None, list[dict[str, str]]]:
    """A saved set of the list's filters (a queue rule's) as the list's FilterSet over every conversation, or None
    and what is wrong, each error naming its parameter (`/filters/<name>`): a name the list does not offer, a value
    that is not a string (or, for a repeated parameter, a list of strings), or what the FilterSet refuses."""
    if not isinstance(data, dict):
        return None, [{"path": path, "message": "must be an object of the list's query parameters"}]
    errors = []
    for name, value in data.items():
        pointer = f"{path}/{pointer_token(name)}"
        if name not in ConversationFilter.base_filters:
            errors.append({"path": pointer, "message": "not a filter of the conversation list"})
        elif not isinstance(value, str) and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            errors.append({"path": pointer, "message": "must be a string (or a list of strings)"})
        elif (found := unstorable(value, pointer)) is not None:
            errors.append(found.as_error())
    if errors:
        return None, errors
    filterset = ConversationFilter(data, queryset=Conversation.objects.all())
    # Over every conversation, for any source: a rule may name a source that has sent nothing yet.
    filterset.filters["source"].queryset = Source.objects.order_by("name")
    if filterset.is_valid():
        return filterset, []
    return None, [
        {"path": f"{path}/{name}", "message": " ".join(str(message) for message in messages)}
        for name, messages in filterset.errors.items()
    ]
