"""Export jobs (`chats.models.ExportJob`), carried out by a worker: the bulk export's own chunks
(`chats.selectors.exports.BulkExport.chunks`, the bytes the synchronous export streams), gathered into parts of
about PART_BYTES stored in the database, in order, so that any app server streams the result back.

The task is idempotent: a job done (or failed) is left as it is; a job queued, or running when its task is
delivered again (its worker died), starts over as a new attempt, its partial parts deleted first. An attempt
that finds a newer one has taken the job over stops. Transient database errors retry the task.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from chats.models import ExportJob, ExportJobPart, JobState
from chats.selectors.export_jobs import job_export

logger = logging.getLogger(__name__)

# A part holds whole lines (conversations) and is cut once it reaches this size.
PART_BYTES = 1024 * 1024
# The job's progress is written every this many conversations.
PROGRESS_EVERY = 100
TRANSIENT_ERRORS = (OperationalError, InterfaceError)
MAX_ERROR_LENGTH = 2000


class _Superseded(Exception):
    """A newer attempt owns the job."""


# A job not found yet may not be committed yet (the task was queued from inside a transaction): retried too.
@shared_task(bind=True, autoretry_for=(*TRANSIENT_ERRORS, ExportJob.DoesNotExist), retry_backoff=True, max_retries=5)
def export_job_run(self: Task, job_id: int) -> None:  # type: ignore[type-arg]
    export_job_execute(job_id)


def export_job_execute(job_id: int, *, part_bytes: int | None = None, progress_every: int | None = None) -> None:
    """Run the export job `job_id` (see the module's docstring); what may fail for good marks it failed."""
    part_bytes = part_bytes or PART_BYTES
    progress_every = progress_every or PROGRESS_EVERY
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().get(pk=job_id)
        if job.state in (JobState.DONE, JobState.FAILED):
            return
        ExportJobPart.objects.filter(job_id=job.pk).delete()
        attempt = job.attempt + 1
        ExportJob.objects.filter(pk=job.pk).update(
            state=JobState.RUNNING,
            attempt=attempt,
            started_at=timezone.now(),
            finished_at=None,
            total=None,
            done=0,
            size=0,
            error="",
        )
    mine = ExportJob.objects.filter(pk=job.pk, attempt=attempt)

    def update(**values: object) -> None:
        if not mine.update(**values):
            raise _Superseded

    try:
        export = job_export(job)
        if errors := export.errors():
            raise ValueError("; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items()))
        update(total=export.queryset().count())
        buffer, index, done, size = bytearray(), 0, 0, 0

        def flush() -> None:
            nonlocal index, size
            update(size=F("size"))  # still ours: never write a part into a newer attempt
            ExportJobPart.objects.create(job_id=job.pk, index=index, data=bytes(buffer))
            index += 1
            size += len(buffer)
            buffer.clear()

        for chunk in export.chunks():
            buffer += chunk
            done += 1
            if len(buffer) >= part_bytes:
                flush()
            if done % progress_every == 0:
                update(done=done, size=size + len(buffer))
        if buffer:
            flush()
        update(state=JobState.DONE, done=done, size=size, finished_at=timezone.now())
    except _Superseded:
        logger.info("export job %s: attempt %s superseded by a newer one", job.pk, attempt)
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:
        logger.exception("export job %s failed", job.pk)
        message = f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH]
        mine.update(state=JobState.FAILED, error=message, finished_at=timezone.now())
