"""Export jobs (`chats.models.ExportJob`), carried out by a worker through `chats.services.export_jobs.export_job_execute`
(the job's states, its parts and its attempts are there). Transient database errors retry the task."""

from __future__ import annotations

from celery import Task, shared_task

from chats.models import ExportJob
from chats.transient import TRANSIENT_ERRORS


# A job not found yet may not be committed yet (the task was queued from inside a transaction): retried too.
@shared_task(bind=True, autoretry_for=(*TRANSIENT_ERRORS, ExportJob.DoesNotExist), retry_backoff=True, max_retries=5)
def export_job_run(self: Task, job_id: int) -> None:  # type: ignore[type-arg]
    from chats.services.export_jobs import export_job_execute

    export_job_execute(job_id)
