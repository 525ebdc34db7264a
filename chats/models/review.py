"""Team review: queues of conversations with a versioned rubric, the rules that add conversations to them, the
items in them, the leases that hand items out, reviewers' answers, and a lead's resolution (the gold answer)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from chats.models.checks import choices_check
from chats.models.conversations import Conversation

MAX_REVIEWS_PER_ITEM = 10
MAX_LEASE_MINUTES = 7 * 24 * 60  # a week: longer, and a forgotten lease blocks an item for good


class Queue(models.Model):
    """Conversations to review, the rubric asked of each, how many reviewers each wants, and who may work it."""

    name = models.CharField(max_length=200, unique=True)
    instructions = models.TextField(blank=True, help_text="Markdown, rendered and sanitized like model output.")
    reviews_per_item = models.PositiveSmallIntegerField(default=1)
    lease_minutes = models.PositiveIntegerField(
        default=30,
        help_text='How long "next item" holds an item for its reviewer (a lead\'s assignment: a day at least).',
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="review_queues", blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reviews_per_item__gte=1, reviews_per_item__lte=MAX_REVIEWS_PER_ITEM),
                name="queue_reviews_per_item_1_to_10",
            ),
            models.CheckConstraint(
                condition=Q(lease_minutes__gte=1, lease_minutes__lte=MAX_LEASE_MINUTES),
                name="queue_lease_minutes_1_to_a_week",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class QueueRule(models.Model):
    """A saved set of the conversation list's filters and a sampling rate: the conversations that match, and that
    the rule's sample takes (`chats.review.sampling`), are added to the queue as they are ingested, or when a lead
    runs the rule over what is stored."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="rules")
    name = models.CharField(max_length=200)
    filters = models.JSONField(default=dict, blank=True, help_text="The list's query parameters, by name.")
    sample_rate = models.DecimalField(max_digits=5, decimal_places=4, default=Decimal(1))
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["queue", "name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "name"], name="queue_rule_unique_name_per_queue"),
            models.CheckConstraint(
                condition=Q(sample_rate__gt=0, sample_rate__lte=1), name="queue_rule_sample_rate_0_to_1"
            ),
        ]
        # Every ingestion reads the enabled rules.
        indexes = [models.Index(fields=["queue"], condition=Q(enabled=True), name="queue_rule_enabled")]

    def __str__(self) -> str:
        return f"{self.name} ({self.queue_id})"


class RubricVersion(models.Model):
    """One saved rubric of a queue. A change to a rubric that has reviews under it makes a new version; reviews
    keep the version they were given under."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="rubric_versions")
    version = models.PositiveIntegerField()
    questions = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["queue", "version"]
        constraints = [models.UniqueConstraint(fields=["queue", "version"], name="rubric_version_unique_per_queue")]

    def __str__(self) -> str:
        return f"{self.queue_id} v{self.version}"


class QueueItem(models.Model):
    """One conversation in one queue; done when it has `reviews_per_item` submitted reviews."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="items")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="queue_items")
    submitted_count = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["queue", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "conversation"], name="queue_item_unique_conversation"),
        ]
        indexes = [models.Index(fields=["queue", "created_at", "id"], name="queue_item_oldest_first")]

    def __str__(self) -> str:
        return f"{self.queue_id}/{self.conversation_id}"


class Lease(models.Model):
    """A slot of an item held for one reviewer until `expires_at` (by "next item" or a lead's assignment)."""

    # Its item's conversation, repeated: every row under a conversation names it (chats.citus_placement).
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="leases")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_leases")
    expires_at = models.DateTimeField()
    # The path handed out: the active path's last message when the lease was taken, and its SHA-256
    # (chats.review.pinning).
    pinned_leaf_key = models.TextField(blank=True, default="")
    pinned_path_sha256 = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "item", "reviewer"], name="lease_unique_per_reviewer")
        ]
        indexes = [models.Index(fields=["reviewer", "expires_at"], name="lease_reviewer_expiry")]

    def __str__(self) -> str:
        return f"{self.item_id} held by {self.reviewer_id}"


class ReviewState(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"


class Review(models.Model):
    """One reviewer's answers to the rubric for one item: a draft until submitted, once."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")  # its item's
    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="queue_reviews")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="reviews")
    answers = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=ReviewState.choices, default=ReviewState.DRAFT)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The path judged: the reviewer's lease's, else the draft's, else the active path when first saved; its last
    # message and SHA-256 (chats.review.pinning). Per-message answers name messages of this path only.
    pinned_leaf_key = models.TextField(blank=True, default="")
    pinned_path_sha256 = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "item", "reviewer"], name="review_unique_per_reviewer"),
            choices_check("review_state_valid", "state", ReviewState),
            models.CheckConstraint(
                condition=Q(state=ReviewState.DRAFT, submitted_at__isnull=True)
                | Q(state=ReviewState.SUBMITTED, submitted_at__isnull=False),
                name="review_submitted_at_iff_submitted",
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "state"], name="review_reviewer_state")]

    def __str__(self) -> str:
        return f"{self.item_id} by {self.reviewer_id} ({self.state})"


class Resolution(models.Model):
    """A lead's final answer for an item: its gold answers and the final correction."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")  # its item's
    item = models.OneToOneField(QueueItem, on_delete=models.CASCADE, related_name="resolution")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_resolutions")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="resolutions")
    answers = models.JSONField(default=dict)
    correction = models.TextField(blank=True)
    # The path the gold answer is about: the one the latest submitted review judged (the active path when no
    # review names one); its last message and SHA-256 (chats.review.pinning). A dataset exports this path.
    pinned_leaf_key = models.TextField(blank=True, default="")
    pinned_path_sha256 = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return f"resolution of {self.item_id}"


class DatasetFormat(models.TextChoices):
    TRAINING = "training", "Training JSONL"
    GOLD = "gold", "Gold JSONL"


class Dataset(models.Model):
    """A named snapshot of the gold items of one or more queues, frozen by content when taken: every line of both
    exports is written then (`DatasetLine`), and the SHA-256 of each export is kept, so that the export is the same
    bytes forever, whatever is ingested, resolved, branched or deleted later."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    queues = models.ManyToManyField(Queue, related_name="datasets", blank=True)
    # Frozen at publication: the gold items in it, and the SHA-256 (hex) of each export's bytes.
    item_count = models.PositiveIntegerField(default=0)
    training_sha256 = models.CharField(max_length=64, blank=True, default="")
    gold_sha256 = models.CharField(max_length=64, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["name"], name="dataset_unique_name")]

    def __str__(self) -> str:
        return self.name

    def sha256_of(self, format: str) -> str:
        return self.training_sha256 if format == DatasetFormat.TRAINING else self.gold_sha256


class DatasetItem(models.Model):
    """One gold item of a dataset: the resolution's answers, correction and pinned path as they were at the
    snapshot, and where they came from. The provenance is copied too (queue name, rubric version, lead), so that it
    survives the rows it names. The export does not read this row but the frozen `DatasetLine`s, so a deleted
    conversation takes its item away here and leaves the dataset's exports as they were."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="dataset_items")
    queue_item = models.ForeignKey(QueueItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    queue = models.ForeignKey(Queue, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    queue_name = models.CharField(max_length=200)
    rubric_version = models.ForeignKey(
        RubricVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    rubric_version_number = models.PositiveIntegerField()
    resolution_id = models.BigIntegerField(help_text="The resolution copied (a later resolution replaces it).")
    lead = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    lead_username = models.CharField(max_length=150)
    answers = models.JSONField(default=dict)
    correction = models.TextField(blank=True)
    # The message the correction replaces: the last visible assistant message of the pinned path.
    correction_message_key = models.TextField(blank=True)
    # The path exported: the resolution's pinned path (chats.review.pinning), its last message and SHA-256.
    pinned_leaf_key = models.TextField(blank=True, default="")
    pinned_path_sha256 = models.CharField(max_length=64, blank=True, default="")
    resolved_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "dataset", "queue_item"], name="dataset_item_unique_queue_item"
            ),
        ]
        indexes = [models.Index(fields=["dataset", "id"], name="dataset_item_in_order")]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.conversation_id}"


class DatasetLine(models.Model):
    """One line of a published dataset's export, written once at publication (the JSON text, without its
    newline): the export is these lines in order, checked against the dataset's SHA-256. It names its conversation
    by uuid only, so that deleting the conversation leaves it as it was."""

    # No index of its own: the unique (dataset, format, index) index starts with it.
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="lines", db_index=False)
    format = models.CharField(max_length=16, choices=DatasetFormat.choices)
    index = models.PositiveIntegerField(help_text="The line's place in the export, from 0.")
    conversation_uuid = models.UUIDField()
    text = models.TextField()

    class Meta:
        ordering = ["dataset", "format", "index"]
        constraints = [
            # The export: WHERE dataset_id = ? AND format = ? AND index > ? ORDER BY index (keyset).
            models.UniqueConstraint(fields=["dataset", "format", "index"], name="dataset_line_unique_place"),
            choices_check("dataset_line_format_valid", "format", DatasetFormat),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.format}/{self.index}"
