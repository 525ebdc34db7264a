from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from chats.api import (
    dataset_views,
    docs,
    export_job_views,
    health_views,
    ingest_views,
    otel_views,
    review_item_views,
    review_rule_views,
    review_views,
    saved_view_views,
    views,
)

app_name = "api"

router = SimpleRouter()
router.register("conversations", views.ConversationViewSet, basename="conversation")
router.register("feedback", views.FeedbackViewSet, basename="feedback")

urlpatterns = [
    path("ingest/", ingest_views.IngestView.as_view(), name="ingest"),
    path("ingest/bulk/", ingest_views.BulkIngestView.as_view(), name="ingest-bulk"),
    # OTLP/HTTP: OTEL_EXPORTER_OTLP_ENDPOINT=<site>/api/v1/otel appends /v1/traces (no trailing slash).
    path("otel/v1/traces", otel_views.OtelTracesView.as_view(), name="otel-traces"),
    path("receipts/<uuid:uuid>/", ingest_views.ReceiptView.as_view(), name="receipt"),
    path("receipts/<uuid:uuid>/payload/", ingest_views.ReceiptPayloadView.as_view(), name="receipt-payload"),
    path("artifacts/", views.ArtifactListView.as_view(), name="artifacts"),
    # Artifact ids are kept as given: dots, slashes and any length (reverse() quotes what a path cannot hold).
    path("artifacts/<artifact_id:artifact_id>/", views.ArtifactDetailView.as_view(), name="artifact-detail"),
    path("labels/", views.LabelListView.as_view(), name="labels"),
    path("export/", views.BulkExportView.as_view(), name="export"),
    path("export/artifacts/", views.ArtifactExportView.as_view(), name="artifacts-export"),
    path("export/jobs/", export_job_views.ExportJobListView.as_view(), name="export-jobs"),
    path("export/jobs/<uuid:uuid>/", export_job_views.ExportJobDetailView.as_view(), name="export-job-detail"),
    path(
        "export/jobs/<uuid:uuid>/download/",
        export_job_views.ExportJobDownloadView.as_view(),
        name="export-job-download",
    ),
    path("queues/", review_views.QueueListView.as_view(), name="queue-list"),
    path("queues/<int:pk>/", review_views.QueueDetailView.as_view(), name="queue-detail"),
    path("queues/<int:pk>/progress/", review_views.QueueProgressView.as_view(), name="queue-progress"),
    path("queues/<int:pk>/items/", review_views.QueueItemListView.as_view(), name="queue-items"),
    path(
        "queues/<int:pk>/items/<int:item>/assign/", review_item_views.ItemAssignView.as_view(), name="queue-item-assign"
    ),
    path(
        "queues/<int:pk>/items/<int:item>/release/",
        review_item_views.ItemReleaseView.as_view(),
        name="queue-item-release",
    ),
    path("queues/<int:pk>/items/<int:item>/draft/", review_item_views.ItemDraftView.as_view(), name="queue-item-draft"),
    path("queues/<int:pk>/agreement/", review_views.QueueAgreementView.as_view(), name="queue-agreement"),
    path("queues/<int:pk>/rules/", review_rule_views.QueueRuleListView.as_view(), name="queue-rules"),
    path("queues/<int:pk>/rules/<int:rule>/", review_rule_views.QueueRuleDetailView.as_view(), name="queue-rule"),
    path("queues/<int:pk>/rules/<int:rule>/run/", review_rule_views.QueueRuleRunView.as_view(), name="queue-rule-run"),
    path(
        "queues/<int:pk>/rules/<int:rule>/runs/<int:run>/",
        review_rule_views.QueueRuleRunDetailView.as_view(),
        name="queue-rule-run-detail",
    ),
    path("queues/<int:pk>/next/", review_views.QueueNextView.as_view(), name="queue-next"),
    path(
        "queues/<int:pk>/items/<int:item>/reviews/",
        review_item_views.ItemReviewsView.as_view(),
        name="queue-item-reviews",
    ),
    path(
        "queues/<int:pk>/items/<int:item>/resolution/",
        review_item_views.ItemResolutionView.as_view(),
        name="queue-item-resolution",
    ),
    path("datasets/", dataset_views.DatasetListView.as_view(), name="dataset-list"),
    path("datasets/<int:pk>/", dataset_views.DatasetDetailView.as_view(), name="dataset-detail"),
    path("datasets/<int:pk>/export/", dataset_views.DatasetExportView.as_view(), name="dataset-export"),
    path("views/", saved_view_views.SavedViewListView.as_view(), name="saved-view-list"),
    path("views/<uuid:uuid>/", saved_view_views.SavedViewDetailView.as_view(), name="saved-view-detail"),
    path("health/", health_views.HealthView.as_view(), name="health"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", docs.SwaggerDocsView.as_view(url_name="api:schema"), name="docs"),
    *router.urls,
]
