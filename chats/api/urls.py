from django.urls import path

from chats.api import ingest_views

app_name = "api"

urlpatterns = [
    path("ingest/", ingest_views.IngestView.as_view(), name="ingest"),
    path("ingest/bulk/", ingest_views.BulkIngestView.as_view(), name="ingest-bulk"),
    path("receipts/<uuid:uuid>/", ingest_views.ReceiptView.as_view(), name="receipt"),
]
