"""Team review's API input and output: queues with their current rubric, their rules, items, reviews and
resolutions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chats.models import MAX_LEASE_MINUTES, MAX_REVIEWS_PER_ITEM, Queue, QueueItem, ReviewState
from chats.selectors.review import ITEM_STATE_HELP, ITEM_STATES

QUESTION_HELP = (
    "A list of questions `{key, prompt, type, target, options | scale}`: `type` is categorical, multi_label, "
    "ordinal, boolean or text; `target` is `conversation` or `role:<role>` (then the answer maps message keys to "
    "values); categorical and multi_label need `options`, ordinal a `scale` `{min, max, labels}`."
)


class RubricSerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField()
    questions = serializers.JSONField(help_text=QUESTION_HELP)


class QueueSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    instructions = serializers.CharField(allow_blank=True, help_text="Markdown.")
    reviews_per_item = serializers.IntegerField()
    lease_minutes = serializers.IntegerField(help_text="How long `next` holds an item for its reviewer.")
    members = serializers.SerializerMethodField(help_text="Usernames of the people who work the queue.")
    rubric = serializers.SerializerMethodField(help_text="The current rubric version.")
    item_count = serializers.IntegerField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_members(self, queue: Queue) -> list[str]:
        return sorted(member.username for member in queue.members.all())

    @extend_schema_field(RubricSerializer)
    def get_rubric(self, queue: Queue) -> dict[str, Any]:
        latest = queue.rubric_versions.all()[0]  # prefetched, newest first
        return {"version": latest.version, "questions": latest.questions}


class QueueCreateSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    instructions = serializers.CharField(allow_blank=True, required=False, default="")
    reviews_per_item = serializers.IntegerField(min_value=1, max_value=MAX_REVIEWS_PER_ITEM, default=1)
    questions = serializers.JSONField(help_text=QUESTION_HELP)
    members = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class QueuePatchSerializer(serializers.Serializer[Any]):
    """Only what is given changes (leads)."""

    name = serializers.CharField(max_length=200, required=False)
    instructions = serializers.CharField(allow_blank=True, required=False, help_text="Markdown.")
    reviews_per_item = serializers.IntegerField(min_value=1, max_value=MAX_REVIEWS_PER_ITEM, required=False)
    lease_minutes = serializers.IntegerField(
        min_value=1, max_value=MAX_LEASE_MINUTES, required=False, help_text="How long `next` holds an item."
    )
    questions = serializers.JSONField(
        required=False, help_text=QUESTION_HELP + " A new rubric version is made only when the questions change."
    )
    members = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Usernames: the whole list, replacing it."
    )


class ItemStateQuery(serializers.Serializer[Any]):
    state = serializers.ChoiceField(choices=list(ITEM_STATES), required=False, help_text=ITEM_STATE_HELP)


class QueueItemSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    conversation = serializers.UUIDField(source="conversation.uuid")
    title = serializers.CharField(source="conversation.title")
    submitted_count = serializers.IntegerField(help_text="Submitted reviews.")
    resolved = serializers.BooleanField(help_text="Whether a lead gave it a gold answer.")
    reviewed_leaf_key = serializers.CharField(
        allow_null=True,
        help_text="The last message of the path it was reviewed on (its resolution's, else its latest submitted "
        "review's); null before any review.",
    )
    grown_since_review = serializers.BooleanField(
        help_text="Reviewed, and the conversation's active path no longer ends there: it grew, or another branch "
        "became active. The reviews and the gold answer still refer to the path judged."
    )
    created_at = serializers.DateTimeField()


class QueueItemPageSerializer(serializers.Serializer[Any]):
    """A page of a queue's items as the items list sends it (for the schema)."""

    next = serializers.URLField(allow_null=True, help_text="The next page, or null.")
    previous = serializers.URLField(allow_null=True, help_text="The previous page, or null.")
    results = QueueItemSerializer(many=True)


class AssignSerializer(serializers.Serializer[Any]):
    reviewer = serializers.CharField(help_text="The username of a member of the queue.")


class ReleaseSerializer(serializers.Serializer[Any]):
    reviewer = serializers.CharField(
        required=False, help_text="Release only this member's slot (username); every slot when left out."
    )


class LeaseSerializer(serializers.Serializer[Any]):
    item = serializers.IntegerField(source="item_id")
    reviewer = serializers.CharField(source="reviewer.username")
    expires_at = serializers.DateTimeField()


class ReleasedSerializer(serializers.Serializer[Any]):
    released = serializers.IntegerField(help_text="How many leases were released.")


class ReviewerProgressSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    done = serializers.IntegerField(help_text="Reviews submitted in the queue.")
    leased = serializers.IntegerField(help_text="Items held for them now.")
    remaining = serializers.IntegerField(help_text="Items that still want reviews and that they have not reviewed.")


class ProgressSerializer(serializers.Serializer[Any]):
    queue = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Items in the queue.")
    done = serializers.IntegerField(help_text="Items with every review wanted.")
    leased = serializers.IntegerField(help_text="Items not done that someone holds now.")
    remaining = serializers.IntegerField(help_text="Items not done.")
    states = serializers.DictField(
        child=serializers.IntegerField(), help_text="Items in each state (the items list's `state`), and `all`."
    )
    reviewers = ReviewerProgressSerializer(many=True, help_text="The members, and whoever reviewed in the queue.")


class ItemsAddSerializer(serializers.Serializer[Any]):
    conversations = serializers.ListField(
        child=serializers.UUIDField(), required=False, max_length=10_000, help_text="Conversation uuids."
    )
    filters = serializers.DictField(
        required=False, help_text="The conversation list's filters (the same names as its query parameters)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("conversations" in attrs) == ("filters" in attrs):
            raise serializers.ValidationError("give either conversations or filters")
        return attrs


class ItemsAddedSerializer(serializers.Serializer[Any]):
    added = serializers.IntegerField(help_text="Conversations added (those already in the queue are not).")


class AnswersSerializer(serializers.Serializer[Any]):
    answers = serializers.JSONField(help_text="Question key to answer, as the rubric says.")


class ResolutionInputSerializer(AnswersSerializer):
    correction = serializers.CharField(allow_blank=True, required=False, default="")


class ReviewSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    reviewer = serializers.CharField(source="reviewer.username")
    rubric_version = serializers.IntegerField(source="rubric_version.version")
    answers = serializers.JSONField()
    state = serializers.ChoiceField(choices=ReviewState.values)
    submitted_at = serializers.DateTimeField(allow_null=True)
    pinned_leaf_key = serializers.CharField(
        allow_blank=True, help_text="The last message of the path judged (the lease's, when the review began)."
    )
    pinned_path_sha256 = serializers.CharField(allow_blank=True, help_text="SHA-256 of that path's messages.")


class ItemReviewsSerializer(serializers.Serializer[Any]):
    reviews = ReviewSerializer(many=True)
    hidden = serializers.IntegerField(
        help_text="Others' submitted reviews not shown until the caller has submitted their own."
    )


class ResolutionSerializer(serializers.Serializer[Any]):
    item = serializers.IntegerField(source="item_id")
    lead = serializers.CharField(source="lead.username")
    rubric_version = serializers.IntegerField(source="rubric_version.version")
    answers = serializers.JSONField()
    correction = serializers.CharField(allow_blank=True)
    pinned_leaf_key = serializers.CharField(
        allow_blank=True, help_text="The last message of the path the gold answer is about (the reviewed one)."
    )
    pinned_path_sha256 = serializers.CharField(allow_blank=True, help_text="SHA-256 of that path's messages.")
    created_at = serializers.DateTimeField()


class PairAgreementSerializer(serializers.Serializer[Any]):
    reviewers = serializers.ListField(child=serializers.CharField(), help_text="The two reviewers' user names.")
    n_items = serializers.IntegerField(help_text="Units both answered.")
    kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa; null when undefined (see `reason`).")
    kappa_linear = serializers.FloatField(
        allow_null=True, help_text="Ordinal questions: Cohen's kappa with linear weights (null otherwise)."
    )
    kappa_quadratic = serializers.FloatField(
        allow_null=True, help_text="Ordinal questions: Cohen's kappa with quadratic weights (null otherwise)."
    )
    percent_agreement = serializers.FloatField(allow_null=True)
    meaningful = serializers.BooleanField(help_text="False when the figure rests on fewer than `min_items` units.")
    reason = serializers.CharField(allow_null=True)


class LabelAgreementSerializer(serializers.Serializer[Any]):
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    alpha = serializers.FloatField(allow_null=True)
    alpha_reason = serializers.CharField(allow_null=True)
    n_items = serializers.IntegerField()
    n_answers = serializers.IntegerField()
    meaningful = serializers.BooleanField()
    pairs = PairAgreementSerializer(many=True)


class QuestionAgreementSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    prompt = serializers.CharField(allow_blank=True)
    versions = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="The rubric versions whose answers these figures compare: those in which the question is the "
        "same (key, prompt, type, target, options or scale). A question that changed has one entry per form.",
    )
    current = serializers.BooleanField(help_text="Whether the current rubric version asks this question so.")
    kind = serializers.CharField(help_text="categorical, multi_label, ordinal or boolean (text has no agreement).")
    level_of_measurement = serializers.CharField(help_text="The distance alpha uses: nominal or ordinal.")
    alpha = serializers.FloatField(
        allow_null=True, help_text="Krippendorff's alpha; null when undefined, and for multi-label (see per_label)."
    )
    alpha_reason = serializers.CharField(allow_null=True)
    alpha_interval = serializers.FloatField(
        allow_null=True,
        help_text="Ordinal questions: Krippendorff's alpha with the interval distance (null otherwise).",
    )
    n_items = serializers.IntegerField(help_text="Units answered by at least two reviewers.")
    n_answers = serializers.IntegerField()
    n_reviewers = serializers.IntegerField()
    meaningful = serializers.BooleanField()
    pairs = PairAgreementSerializer(many=True)
    per_label = LabelAgreementSerializer(many=True)


class AgreementSerializer(serializers.Serializer[Any]):
    queue = serializers.IntegerField()
    rubric_version = serializers.IntegerField(help_text="The current rubric version.")
    min_items = serializers.IntegerField(help_text="Below this many units a figure is marked not meaningful.")
    questions = QuestionAgreementSerializer(
        many=True, help_text="The current version's questions in order, then the older forms of changed questions."
    )


def item_of(item: QueueItem) -> dict[str, Any]:
    return dict(QueueItemSerializer(item).data)


FILTERS_HELP = (
    "The conversation list's filters, by query parameter name (`source`, `tool_name`, `has_tool_calls`, ...): "
    "each value a string, or a list of strings for a repeated parameter. Checked by the list's own filters."
)


class QueueRuleSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    queue = serializers.IntegerField(source="queue_id")
    name = serializers.CharField()
    filters = serializers.JSONField(help_text=FILTERS_HELP)
    sample_rate = serializers.DecimalField(max_digits=5, decimal_places=4, coerce_to_string=False)
    enabled = serializers.BooleanField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class QueueRuleRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    rule = serializers.IntegerField(source="rule_id")
    state = serializers.CharField(help_text="queued, running, done or failed.")
    added = serializers.IntegerField(
        allow_null=True, help_text="Conversations added (those already in the queue are not); null until done."
    )
    error = serializers.CharField(help_text="Why the run failed (empty otherwise).")
    requested_by = serializers.CharField(source="requested_by.username")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    def get_url(self, run: Any) -> str:
        return reverse("api:queue-rule-run-detail", args=[run.rule.queue_id, run.rule_id, run.pk])


class QueueRuleInputSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    filters = serializers.JSONField(help_text=FILTERS_HELP)
    sample_rate = serializers.DecimalField(
        max_digits=5,
        decimal_places=4,
        min_value=Decimal("0.0001"),
        max_value=Decimal(1),
        default=Decimal(1),
        help_text="The share of the matching conversations taken, above 0 and at most 1; each conversation is "
        "taken or not by a stable hash of the rule and the conversation.",
    )
    enabled = serializers.BooleanField(default=True)


class QueueRulePatchSerializer(QueueRuleInputSerializer):
    """Only what is given changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, partial=True, **kwargs)


class DatasetSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    queues = serializers.SerializerMethodField(help_text="The queues it was taken from: `{id, name}`.")
    item_count = serializers.IntegerField(help_text="Gold items frozen in it.")
    training_sha256 = serializers.CharField(
        help_text="SHA-256 (hex) of the `training` export's bytes, taken at publication: every export gives it."
    )
    gold_sha256 = serializers.CharField(help_text="SHA-256 (hex) of the `gold` export's bytes, taken at publication.")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_queues(self, dataset: Any) -> list[dict[str, Any]]:
        return [{"id": queue.pk, "name": queue.name} for queue in sorted(dataset.queues.all(), key=lambda q: q.name)]


class DatasetCreateSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    queues = serializers.ListField(
        child=serializers.IntegerField(min_value=1), max_length=1000, help_text="Ids of the queues to take from."
    )
    description = serializers.CharField(allow_blank=True, required=False, default="")


class DatasetExportQuery(serializers.Serializer[Any]):
    format = serializers.ChoiceField(
        choices=["training", "gold"],
        help_text="`training`: OpenAI chat fine-tuning JSONL, corrections applied, provenance in `metadata`; "
        "`gold`: each conversation in its own format with its gold answers.",
    )
