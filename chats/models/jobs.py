"""Background jobs and their records: an export run by a worker (its result kept in the database, in ordered
chunks, so that any app server streams it back), and a lead's run of a queue rule over what is stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from chats.models.checks import choices_check
from chats.models.review import QueueRule
from chats.models.sources import ApiKey, Source


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ExportJob(models.Model):
    """A bulk export (`/api/v1/export/`) asked for once and run by a worker: the same formats, envelope and
    filters, and the same bytes. Asked for by a person (`requested_by`) or by a source's key (`source`, which then
    scopes the export to that source's conversations, as the synchronous export does); `api_key` is the key used,
    if any. The result is the concatenation of its parts, in `index` order."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="export_jobs"
    )
    source = models.ForeignKey(Source, on_delete=models.CASCADE, null=True, blank=True, related_name="export_jobs")
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    format = models.CharField(max_length=32)
    envelope = models.BooleanField(default=False)
    filters = models.JSONField(
        default=dict, blank=True, help_text="The export's filters as query parameters: name -> list of values."
    )
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    attempt = models.PositiveIntegerField(
        default=0, help_text="Which run of the task owns the job: a re-delivered task starts a new one."
    )
    total = models.PositiveIntegerField(null=True, blank=True, help_text="Conversations to export, once counted.")
    done = models.PositiveIntegerField(default=0, help_text="Conversations exported so far.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes of the result so far.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            choices_check("export_job_state_valid", "state", JobState),
            # A job belongs to exactly one asker: a person, or a source by its key.
            models.CheckConstraint(
                condition=Q(requested_by__isnull=False, source__isnull=True)
                | Q(requested_by__isnull=True, source__isnull=False),
                name="export_job_one_owner",
            ),
        ]
        indexes = [
            # "My export jobs", newest first (by id): the page and GET /api/v1/export/jobs/.
            models.Index(fields=["requested_by", "-id"], name="export_job_user_idx"),
            models.Index(fields=["source", "-id"], name="export_job_source_idx"),
        ]

    def __str__(self) -> str:
        return f"export {self.uuid} ({self.format}, {self.state})"

    def get_absolute_url(self) -> str:
        return reverse("api:export-job-detail", args=[self.uuid])

    @property
    def download_url(self) -> str:
        return reverse("api:export-job-download", args=[self.uuid])


class ExportJobPart(models.Model):
    """One chunk of an export job's result (about `chats.services.export_jobs.PART_BYTES`), whole lines only."""

    job = models.ForeignKey(ExportJob, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["job", "index"]
        # Also the index the download reads the parts in order by.
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="export_job_part_unique_index")]

    def __str__(self) -> str:
        return f"part {self.index} of job {self.job_id}"


class QueueRuleRun(models.Model):
    """A lead's run of a queue rule over the stored conversations, carried out by a worker: its state and how
    many conversations it added to the queue."""

    rule = models.ForeignKey(QueueRule, on_delete=models.CASCADE, related_name="runs")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    added = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [choices_check("queue_rule_run_state_valid", "state", JobState)]
        # A rule's runs, newest first.
        indexes = [models.Index(fields=["rule", "-created_at"], name="queue_rule_run_rule_idx")]

    def __str__(self) -> str:
        return f"run {self.pk} of rule {self.rule_id} ({self.state})"
