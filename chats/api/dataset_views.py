"""Datasets API: list and take snapshots of gold items (leads), read one, and export it as JSONL.

People only, as team review: a source's key gets 403. Every person with a role lists and reads datasets; only
leads take snapshots; the exports hold the gold answers, so, like resolutions, they are for leads and auditors.
The snapshot goes through `chats.services.datasets`, the export is recorded like every export.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from chats.api.errors import first_or_404, refuse_missing
from chats.api.review_access import ERRORS, PersonView, lead_roles, overseer_roles, person_of, valid_input
from chats.api.schema import BAD_REQUEST, NDJSON, NOT_FOUND, error, ndjson
from chats.api.serializers.datasets import DatasetCreateSerializer, DatasetExportQuery, DatasetSerializer
from chats.models import Dataset, Queue
from chats.selectors.datasets import datasets_list
from chats.services.datasets import dataset_snapshot_create
from chats.services.exports import dataset_export_stream


def _dataset(pk: int) -> Dataset:
    return first_or_404(datasets_list().filter(pk=pk), "No such dataset.")


class DatasetListView(PersonView):
    @extend_schema(
        operation_id="datasets_list",
        summary="List datasets",
        description="Every dataset, newest first, with the queues it was taken from and its item count.",
        responses={200: DatasetSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return Response(DatasetSerializer(datasets_list(), many=True).data)

    @extend_schema(
        operation_id="datasets_create",
        summary="Take a dataset snapshot (leads)",
        description="Freezes every resolved item of the queues as resolved now: a later resolution or snapshot "
        "never changes it. Refused (400) when the name is taken or the queues have no resolved item.",
        request=DatasetCreateSerializer,
        responses={201: DatasetSerializer, **BAD_REQUEST, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        lead_roles(request)
        data = valid_input(DatasetCreateSerializer, request.data)
        found = Queue.objects.in_bulk(data["queues"])
        refuse_missing("queues", data["queues"], found, "no such queue")
        dataset = dataset_snapshot_create(
            actor=person_of(request), name=data["name"], queues=list(found.values()), description=data["description"]
        )
        return Response(DatasetSerializer(_dataset(dataset.pk)).data, status=status.HTTP_201_CREATED)


class DatasetDetailView(PersonView):
    @extend_schema(
        operation_id="datasets_retrieve",
        summary="A dataset",
        responses={200: DatasetSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(DatasetSerializer(_dataset(pk)).data)


class DatasetExportView(PersonView):
    @extend_schema(
        operation_id="datasets_export",
        summary="Export a dataset as JSONL (leads and auditors)",
        description="Streams one gold item per line, in snapshot order. `format=training`: the OpenAI chat "
        "fine-tuning record of the reviewed path (the path the resolution pinned), the lead's correction replacing "
        "its last assistant answer, with `metadata` saying where it came from (`dataset`, `conversation`, `source`, "
        "`external_id`, `queue`, `item`, `resolution`, `lead`, `rubric_version`, `resolved_at`, `reviewed_leaf`, "
        "`path_sha256`). `format=gold`: `{provenance, answers, "
        "correction, correction_message, format, document}`, the conversation in the format it arrived in, cut "
        "to the reviewed path. Both are frozen at publication: the same bytes forever, checked against the "
        "dataset's `training_sha256` / `gold_sha256` before they are sent (also in the `X-Content-SHA256` "
        "header); a mismatch answers 500 and sends nothing. Recorded in the audit log.",
        parameters=[DatasetExportQuery],
        responses={
            **ndjson(
                "Newline-delimited JSON, one gold item per line.",
                "gold",
                '{"provenance":{"dataset":{"id":1,"name":"v1"},"queue":{"id":1,"name":"Answers"},'
                '"item":3,"resolution":2,"lead":"lena","rubric_version":1},"answers":{"correct":"partly"},'
                '"correction":"Anneal at 58 °C.","correction_message":"m3","format":"openai","document":{}}\n',
            ),
            **BAD_REQUEST,
            **ERRORS,
            **NOT_FOUND,
            500: error("The stored lines no longer give the published SHA-256: nothing is sent."),
        },
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        overseer_roles(request, "Only leads and auditors export datasets (they hold the gold answers).")
        query = valid_input(DatasetExportQuery, request.query_params)
        fmt = query["format"]
        dataset = _dataset(pk)
        lines = dataset_export_stream(actor=person_of(request), dataset=dataset, format=fmt)
        response = StreamingHttpResponse(lines, content_type=NDJSON)
        response["X-Content-SHA256"] = dataset.sha256_of(fmt)
        response["Content-Disposition"] = f'attachment; filename="dataset-{dataset.pk}-{fmt}.jsonl"'
        return response
