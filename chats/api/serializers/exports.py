"""Bulk exports on the API: the query parameters of a streamed export, and an export job's input and state."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chats.export import FORMATS
from chats.models import ExportJob, JobState
from chats.selectors.exports import BULK_EXPORT_FORMATS, TRAINING


class BulkExportQuery(serializers.Serializer[Any]):
    format = serializers.ChoiceField(
        choices=sorted([*FORMATS, TRAINING]), help_text="A conversation format, or training."
    )
    envelope = serializers.BooleanField(
        default=False, help_text="Wrap each document with its uuid, omissions and injection policy verdicts."
    )


class ExportJobCreateSerializer(serializers.Serializer[Any]):
    """What an export job is asked with (documentation: `chats.services.export_jobs` checks it)."""

    format = serializers.ChoiceField(choices=list(BULK_EXPORT_FORMATS), help_text="A conversation format, or training.")
    envelope = serializers.BooleanField(default=False, help_text="As the synchronous export's `envelope`.")
    filters = serializers.DictField(
        required=False,
        help_text="The export's query parameters (the conversation list's filters, `input_format` for the format "
        "a conversation arrived in), by name: a string, or a list of strings.",
    )


class ExportJobProgressSerializer(serializers.Serializer[Any]):
    done = serializers.IntegerField(help_text="Conversations exported so far.")
    total = serializers.IntegerField(allow_null=True, help_text="Conversations to export; null until counted.")


class ExportJobSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField(source="uuid")
    url = serializers.CharField(source="get_absolute_url")
    format = serializers.CharField()
    envelope = serializers.BooleanField()
    filters = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    state = serializers.CharField(help_text="queued, running, done or failed.")
    progress = serializers.SerializerMethodField()
    size = serializers.IntegerField(help_text="Bytes of the result so far.")
    error = serializers.CharField(help_text="Why the job failed (empty otherwise).")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    download_url = serializers.SerializerMethodField(help_text="Once done: where to download the result.")

    @extend_schema_field(ExportJobProgressSerializer)
    def get_progress(self, job: ExportJob) -> dict[str, Any]:
        return {"done": job.done, "total": job.total}

    def get_download_url(self, job: ExportJob) -> str | None:
        return job.download_url if job.state == JobState.DONE else None
