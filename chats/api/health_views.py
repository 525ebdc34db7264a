"""Health for staff: what a monitor polls. The asynchronous ingest queue's depth and the age of its oldest
receipt, in all and per source (a source whose documents wait while others flow is a stuck worker or a poison
document that did not reach a final outcome)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chats.api.serializers.common import ErrorSerializer
from chats.selectors.ingest_queue import ingest_queue_by_source, queue_age_seconds


class SourceQueueSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(help_text="The source's name.")
    queued = serializers.IntegerField(help_text="Its receipts still queued.")
    oldest_queued_at = serializers.DateTimeField(help_text="When the oldest of them was received.")
    oldest_age_seconds = serializers.FloatField(help_text="How long it has waited.")


class IngestQueueSerializer(serializers.Serializer[Any]):
    queued = serializers.IntegerField(help_text="Receipts still queued, all sources.")
    oldest_queued_at = serializers.DateTimeField(allow_null=True, help_text="The oldest's reception; null: none.")
    oldest_age_seconds = serializers.FloatField(allow_null=True, help_text="How long it has waited; null: none.")
    sources = SourceQueueSerializer(many=True, help_text="Per source with a receipt queued, by name.")


class HealthSerializer(serializers.Serializer[Any]):
    ingest_queue = IngestQueueSerializer()


class HealthView(APIView):
    """GET: the ingest queue's health; staff only (is_staff), by session or personal token."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        operation_id="health",
        responses={200: HealthSerializer, 401: ErrorSerializer, 403: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        now = timezone.now()
        queues = ingest_queue_by_source()
        oldest = min((queue.oldest_queued_at for queue in queues), default=None)
        body = {
            "ingest_queue": {
                "queued": sum(queue.queued for queue in queues),
                "oldest_queued_at": oldest,
                "oldest_age_seconds": queue_age_seconds(oldest, now),
                "sources": [
                    {
                        "name": queue.source,
                        "queued": queue.queued,
                        "oldest_queued_at": queue.oldest_queued_at,
                        "oldest_age_seconds": queue.oldest_age_seconds(now),
                    }
                    for queue in queues
                ],
            }
        }
        return Response(HealthSerializer(body).data)
