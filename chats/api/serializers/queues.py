"""Team review's queues on the API: a queue with its current rubric, its settings, its items (their pages, leases
and assignment) and its progress."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chats.models import MAX_LEASE_MINUTES, MAX_REVIEWS_PER_ITEM, Queue, QueueItem
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


def item_of(item: QueueItem) -> dict[str, Any]:
    return dict(QueueItemSerializer(item).data)
