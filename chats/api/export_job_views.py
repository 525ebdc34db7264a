"""Export jobs API: ask for a bulk export to be run by a worker (202 with the job), follow its progress, list
one's own jobs, and download the result once done.

Whoever may export (`GET /api/v1/export/`: a person with a reading role, or a source's key, limited to its own
source) may ask for a job, and sees only the jobs they asked for: a person their own (leads, staff and superusers
too: the audit log, not this list, is where exports are overseen), a source's key those asked with its source's
keys. Another's job answers 404, as one that does not exist. Asking for a job is audited
(`export_job.created`); a download is audited as every export is (`conversation.exported`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chats.api.errors import first_or_404
from chats.api.pagination import ExportJobPagination
from chats.api.permissions import CanRead, caller_source
from chats.api.schema import BAD_REQUEST, NDJSON, NOT_FOUND, READ_ERRORS, error
from chats.api.serializers.exports import ExportJobCreateSerializer, ExportJobSerializer
from chats.models import ApiKey, ExportJob, JobState
from chats.selectors.export_jobs import export_job_parts, export_jobs_of, job_export
from chats.services.export_jobs import export_job_create, export_job_download_record

NOT_DONE = {409: error("The job is not done (queued, running or failed): there is nothing to download yet.")}


def _jobs(request: Request) -> QuerySet[ExportJob]:
    user = request.user
    return export_jobs_of(user=user if isinstance(user, User) else None, source=caller_source(request))


def _job(request: Request, uuid: str) -> ExportJob:
    return first_or_404(_jobs(request).filter(uuid=uuid), "No such export job among yours.")


def _out(job: ExportJob) -> dict[str, Any]:
    return dict(ExportJobSerializer(job).data)


class ExportJobListView(generics.GenericAPIView[ExportJob]):
    permission_classes = [CanRead]
    pagination_class = ExportJobPagination
    serializer_class = ExportJobSerializer
    filter_backends: list[Any] = []
    queryset = ExportJob.objects.none()  # the schema's model; the views read the caller's own jobs

    @extend_schema(
        operation_id="export_jobs_list",
        summary="Your export jobs",
        description="The jobs you asked for, newest first, 50 a page (`cursor` pages on).",
        responses={200: ExportJobSerializer(many=True), **BAD_REQUEST, **READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(_jobs(request)) or []
        return self.get_paginated_response(ExportJobSerializer(page, many=True).data)

    @extend_schema(
        operation_id="export_jobs_create",
        summary="Ask for a bulk export as a job",
        description="The export `GET /api/v1/export/` would stream for the same `format`, `envelope` and "
        "`filters` (its query parameters, by name: a string, or a list of strings for a repeated one), run by a "
        "worker. Answers 202 with the job (its `url` in `Location`); poll it until `state` is `done`, then "
        "download it from `download_url`. Each error names its field (`/filters/<name>`). Recorded in the audit "
        "log.",
        request=ExportJobCreateSerializer,
        responses={202: ExportJobSerializer, **BAD_REQUEST, **READ_ERRORS},
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["The body must be a JSON object."]})
        user = request.user
        key = request.auth if isinstance(request.auth, ApiKey) else None
        job = export_job_create(
            actor=user,
            requested_by=user if isinstance(user, User) else None,
            source=caller_source(request),
            api_key=key,
            format=request.data.get("format"),
            envelope=request.data.get("envelope", False),
            filters=request.data.get("filters", {}),
        )
        body = _out(_job(request, str(job.uuid)))
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class ExportJobDetailView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="export_jobs_retrieve",
        summary="One of your export jobs",
        description="Its state (queued, running, done, failed), progress (`done` of `total` conversations), the "
        "error that made it fail, and once done the URL of its result.",
        responses={200: ExportJobSerializer, **READ_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, uuid: str) -> Response:
        return Response(_out(_job(request, uuid)))


class ExportJobDownloadView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="export_jobs_download",
        summary="Download an export job's result",
        description="Streams the bytes the synchronous export would have streamed when the job ran (NDJSON, or "
        "training JSONL), as a file named like its download. Recorded in the audit log as an export.",
        responses={
            (200, NDJSON): OpenApiResponse(OpenApiTypes.STR, description="The export, one conversation per line."),
            **READ_ERRORS,
            **NOT_FOUND,
            **NOT_DONE,
        },
    )
    def get(self, request: Request, uuid: str) -> StreamingHttpResponse | Response:
        job = _job(request, uuid)
        if job.state != JobState.DONE:
            body = {"errors": [{"path": "", "message": f"The job is {job.state}: its result is not ready."}]}
            return Response(body, status=status.HTTP_409_CONFLICT)
        export_job_download_record(actor=request.user, job=job)
        export = job_export(job)
        response = StreamingHttpResponse(export_job_parts(job), content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        return response
