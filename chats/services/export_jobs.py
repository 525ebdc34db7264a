"""Export jobs: a bulk export asked for now and carried out by a worker (`chats.tasks.exports`), with the same
format, envelope, filters and bytes as the synchronous export (`chats.selectors.exports.bulk_export`).

Asking for a job is audited (`export_job.created`); downloading its result is audited as every export is
(`conversation.exported`, through `chats.services.exports.export_record`).

The worker runs `export_job_execute`: the bulk export's own chunks (`chats.selectors.exports.BulkExport.chunks`,
the bytes the synchronous export streams), gathered into parts of about PART_BYTES stored in the database, in
order, so that any app server streams the result back. It is idempotent: a job done (or failed) is left as it is; a
job queued, or running when its task is delivered again (its worker died), starts over as a new attempt, its partial
parts deleted first. An attempt that finds a newer one has taken the job over stops. A transient database error is
raised, for the task to retry.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.errors import InvalidInput
from chats.filters.exports import ExportFilter
from chats.models import ApiKey, ExportJob, ExportJobPart, JobState, Source
from chats.selectors.export_jobs import job_export
from chats.selectors.exports import BULK_EXPORT_FORMATS, bulk_export, filters_query
from chats.services.audit import Actor, audit_record, audited_write
from chats.services.dispatch import EXPORT_JOB_RUN, task_send
from chats.services.exports import export_record
from chats.storable import pointer_token
from chats.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)

# A part holds whole lines (conversations) and is cut once it reaches this size.
PART_BYTES = 1024 * 1024
# The job's progress is written every this many conversations.
PROGRESS_EVERY = 100
MAX_ERROR_LENGTH = 2000


def _checked_filters(data: object) -> dict[str, list[str]]:
    """The export's filters, each a list of strings, or InvalidInput naming each one at fault (`/filters/<name>`)."""
    if not isinstance(data, dict):
        raise InvalidInput([{"path": "/filters", "message": "must be an object of the export's query parameters"}])
    errors, filters = [], {}
    for name, value in data.items():
        values = [value] if isinstance(value, str) else value
        if name not in ExportFilter.base_filters:
            errors.append({"path": f"/filters/{pointer_token(name)}", "message": "not a filter of the export"})
        elif not isinstance(values, list) or not all(isinstance(item, str) for item in values):
            errors.append({"path": f"/filters/{name}", "message": "must be a string (or a list of strings)"})
        elif values := [item for item in values if item != ""]:
            filters[name] = values
    if errors:
        raise InvalidInput(errors)
    return filters


def _audit_filters(filters: dict[str, list[str]]) -> dict[str, Any]:
    """As the synchronous export records them: one value as a string, several as a list."""
    return {name: values[0] if len(values) == 1 else values for name, values in filters.items()}


@audited_write
def _export_job_save(
    *,
    actor: Actor,
    requested_by: User | None,
    source: Source | None,
    api_key: ApiKey | None,
    format: str,
    envelope: bool,
    filters: dict[str, list[str]],
) -> ExportJob:
    job = ExportJob.objects.create(
        requested_by=requested_by, source=source, api_key=api_key, format=format, envelope=envelope, filters=filters
    )
    audit_record(
        actor=actor,
        action=AuditAction.EXPORT_JOB_CREATED,
        target_type="export_job",
        target_id=str(job.uuid),
        after={"format": format, "envelope": envelope, "filters": _audit_filters(filters)},
    )
    return job


def export_job_create(
    *,
    actor: Actor,
    requested_by: User | None,
    source: Source | None = None,
    api_key: ApiKey | None = None,
    format: object,
    envelope: object = False,
    filters: object = None,
) -> ExportJob:
    """A job exporting what the synchronous export would for the same format, envelope and filters, asked for
    by a person (`requested_by`) or a source's key (`source`, which limits it to that source's conversations),
    queued for a worker once saved. Whoever may export may ask for a job; nothing is checked here that the export
    does not check."""
    if format not in BULK_EXPORT_FORMATS:
        raise InvalidInput([{"path": "/format", "message": f"must be one of {', '.join(BULK_EXPORT_FORMATS)}"}])
    if not isinstance(envelope, bool):
        raise InvalidInput([{"path": "/envelope", "message": "must be true or false"}])
    checked = _checked_filters({} if filters is None else filters)
    export = bulk_export(filters_query(checked), format=format, reader=requested_by, envelope=envelope, source=source)
    if errors := export.errors():
        raise InvalidInput(
            [
                {"path": f"/filters/{name}", "message": message}
                for name, messages in errors.items()
                for message in messages
            ]
        )
    job = _export_job_save(
        actor=actor,
        requested_by=requested_by,
        source=source,
        api_key=api_key,
        format=format,
        envelope=envelope,
        filters=checked,
    )
    # Queued once the job is saved (committed, unless the caller holds a transaction: the task then retries until
    # it finds the job); without a broker the export runs here, and the job is done when this returns.
    task_send(EXPORT_JOB_RUN, job.pk)
    job.refresh_from_db()
    return job


def export_job_download_record(*, actor: Actor, job: ExportJob) -> None:
    """A download of a job's result is an export: recorded as the synchronous export records one, with the job."""
    export_record(
        actor=actor,
        what="conversations",
        format=job.format,
        filters={"job": str(job.uuid), **_audit_filters(job.filters)},
        count=job.total,
    )


class _Superseded(Exception):
    """A newer attempt owns the job."""


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
