"""Export jobs as their askers see them: their own jobs, newest first, and a done job's result, part by part."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import User
from django.db.models import QuerySet

from chats.models import ExportJob, ExportJobPart, Source
from chats.selectors.exports import BulkExport, bulk_export, filters_query

# Parts read per query while a result streams: a bounded memory (parts are about 1 MiB each).
PARTS_PER_READ = 4


def export_jobs_of(*, user: User | None, source: Source | None) -> QuerySet[ExportJob]:
    """The jobs a caller sees: those a person asked for, or those asked for with a source's keys; newest first,
    one query (`export_job_user_idx`, `export_job_source_idx`)."""
    if source is not None:
        return ExportJob.objects.filter(source=source).order_by("-id")
    if user is None or user.pk is None:
        return ExportJob.objects.none()
    return ExportJob.objects.filter(requested_by_id=user.pk).order_by("-id")


def job_export(job: ExportJob) -> BulkExport:
    """The bulk export a job was asked for (what names its file and content type, and what its task runs)."""
    return bulk_export(
        filters_query(job.filters),
        format=job.format,
        reader=job.requested_by,
        envelope=job.envelope,
        source=job.source,
    )


def export_job_parts(job: ExportJob) -> Iterator[bytes]:
    """A job's result, its parts in order, PARTS_PER_READ at a time (`export_job_part_unique_index`)."""
    after = -1
    while True:
        rows = list(
            ExportJobPart.objects.filter(job_id=job.pk, index__gt=after)
            .order_by("index")
            .values_list("index", "data")[:PARTS_PER_READ]
        )
        for index, data in rows:
            yield bytes(data)
            after = index
        if len(rows) < PARTS_PER_READ:
            return
