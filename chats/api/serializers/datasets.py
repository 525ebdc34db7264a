"""Datasets on the API: a dataset, its create, and the query parameters of its export."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class DatasetSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    queues = serializers.SerializerMethodField(help_text="The queues it was taken from: `{id, name}`.")
    item_count = serializers.IntegerField(help_text="Gold items frozen in it.")
    training_sha256 = serializers.CharField(
        help_text="SHA-256 (hex) of the `training` export's bytes, taken at publication: every export gives it."
    )
    gold_sha256 = serializers.CharField(help_text="SHA-256 (hex) of the `gold` export's bytes, taken at publication.")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_queues(self, dataset: Any) -> list[dict[str, Any]]:
        return [{"id": queue.pk, "name": queue.name} for queue in sorted(dataset.queues.all(), key=lambda q: q.name)]


class DatasetCreateSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    queues = serializers.ListField(
        child=serializers.IntegerField(min_value=1), max_length=1000, help_text="Ids of the queues to take from."
    )
    description = serializers.CharField(allow_blank=True, required=False, default="")


class DatasetExportQuery(serializers.Serializer[Any]):
    format = serializers.ChoiceField(
        choices=["training", "gold"],
        help_text="`training`: OpenAI chat fine-tuning JSONL, corrections applied, provenance in `metadata`; "
        "`gold`: each conversation in its own format with its gold answers.",
    )
