"""What came in, read-only: ingestion receipts (with their payload, shown and downloadable), the payloads stored
once per distinct content, and the bytes each key sent per day. The one write here is removing old payloads,
through the retention service, which audits it."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.db.models.functions import Length
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from chats.admin.base import ReadOnlyAdmin, YesNoFilter
from chats.models import ApiKeyDailyUsage, IngestionReceipt, ReceiptPayload
from chats.services.receipts import receipt_payloads_prune

# A payload of up to the body limit (32 MiB) is shown up to this many characters; the download has it all.
PAYLOAD_SHOWN_LIMIT = 200_000


def payload_html(payload: ReceiptPayload | None, download_url: str = "") -> str:
    """A payload as the admin shows it: the JSON document laid out, or the text with the bytes that are not UTF-8
    as \\xNN escapes, and a link to the exact bytes."""
    if payload is None:
        return render_to_string("admin/chats/ingestionreceipt/_payload.html", {"pruned": True})
    shown = payload.shown
    text = json.dumps(shown.document, indent=2, ensure_ascii=False) if shown.is_json else shown.text
    # A document rejected for an unpaired surrogate decodes to one, which no page can hold: shown as the JSON
    # escape it was sent as ("\ud800").
    text = text.encode(errors="backslashreplace").decode()
    context = {
        "payload": payload,
        "is_json": shown.is_json,
        "text": text[:PAYLOAD_SHOWN_LIMIT],
        "cut": len(text) > PAYLOAD_SHOWN_LIMIT,
        "limit": PAYLOAD_SHOWN_LIMIT,
        "download_url": download_url,
    }
    return render_to_string("admin/chats/ingestionreceipt/_payload.html", context)


def payload_download(payload: ReceiptPayload, name: str) -> HttpResponse:
    response = HttpResponse(payload.content, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{name}.bin"'
    return response


def _get(queryset: QuerySet[Any], object_id: str, from_field: str | None) -> Any:
    """ModelAdmin.get_object over another queryset."""
    model = queryset.model
    field = model._meta.pk if from_field is None else model._meta.get_field(from_field)
    try:
        return queryset.get(**{field.name: field.to_python(object_id)})
    except (model.DoesNotExist, ValidationError, ValueError):
        return None


class PayloadKeptFilter(YesNoFilter):
    title = "payload"
    parameter_name = "payload_kept"
    condition = Q(payload__isnull=False)
    yes_label, no_label = "Kept", "Removed by retention"


class PrunePayloadsForm(forms.Form):
    older_than_days = forms.IntegerField(
        label="Older than (days)",
        min_value=0,
        max_value=36_500,
        help_text="Only the selected receipts created more than this many days ago lose their payload; 0: all of them.",
    )


@admin.register(IngestionReceipt)
class IngestionReceiptAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "source",
        "external_id",
        "input_format",
        "outcome",
        "messages_added",
        "size_bytes",
        "payload_kept",
        "conversation",
    ]
    list_select_related = ["source", "conversation"]
    list_filter = ["outcome", PayloadKeptFilter, "source", "created_at"]
    search_fields = ["=external_id", "=payload_sha256"]
    raw_id_fields = ["source", "api_key", "conversation"]
    ordering = ["-created_at", "-id"]
    fields = [
        "uuid",
        "source",
        "api_key",
        "conversation",
        "external_id",
        "input_format",
        "outcome",
        "messages_added",
        "warnings",
        "errors",
        "created_at",
        "payload_sha256",
        "size_bytes",
        "payload_shown",
    ]
    readonly_fields = ["payload_shown"]
    actions = ["prune_payloads"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[IngestionReceipt]:
        return super().get_queryset(request).select_related("source", "api_key", "conversation")

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> IngestionReceipt | None:
        # The change page shows the payload: read in the receipt's query (the list never reads payloads).
        receipt: IngestionReceipt | None = _get(
            self.get_queryset(request).select_related("payload"), object_id, from_field
        )
        return receipt

    def get_urls(self) -> list[URLPattern]:
        download = path(
            "<int:object_id>/payload/",
            self.admin_site.admin_view(self.payload_view),
            name="chats_ingestionreceipt_payload",
        )
        return [download, *super().get_urls()]

    @admin.display(description="payload kept", boolean=True)
    def payload_kept(self, obj: IngestionReceipt) -> bool:
        return not obj.payload_pruned

    @admin.display(description="payload")
    def payload_shown(self, obj: IngestionReceipt) -> str:
        return payload_html(obj.payload, reverse("admin:chats_ingestionreceipt_payload", args=[obj.pk]))

    def payload_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """The exact bytes of a receipt's payload, as a download."""
        receipt = get_object_or_404(IngestionReceipt.objects.select_related("payload"), pk=object_id)
        if not self.has_view_permission(request, receipt):
            raise PermissionDenied
        if receipt.payload is None:
            return HttpResponse("The payload was removed by retention.", status=410, content_type="text/plain")
        return payload_download(receipt.payload, f"receipt-{receipt.uuid}")

    @admin.action(description="Remove the stored payloads of the selected receipts…", permissions=["prune"])
    def prune_payloads(self, request: HttpRequest, queryset: QuerySet[IngestionReceipt]) -> TemplateResponse | None:
        """A page that says what would go (for the days given), then removes it: the receipts stay."""
        posted = "older_than_days" in request.POST
        default = {"older_than_days": settings.MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS}
        form = PrunePayloadsForm(request.POST if posted else default)
        if form.is_valid() and "apply" in request.POST:
            result = receipt_payloads_prune(
                older_than_days=form.cleaned_data["older_than_days"], receipts=queryset, actor=request.user
            )
            self.message_user(
                request,
                f"Removed the payloads of {result.receipts} receipt(s): {result.payloads} payload(s) deleted, "
                f"{filesizeformat(result.stored_bytes)} stored ({filesizeformat(result.payload_bytes)} as received).",
                messages.SUCCESS,
            )
            return None
        preview = None
        if form.is_valid():
            preview = receipt_payloads_prune(
                older_than_days=form.cleaned_data["older_than_days"],
                receipts=queryset,
                actor=request.user,
                dry_run=True,
            )
        context = {
            **self.admin_site.each_context(request),
            "title": "Remove the stored payloads of receipts",
            "opts": self.opts,
            "form": form,
            "preview": preview,
            "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
            "select_across": request.POST.get("select_across", "0"),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "retention_days": settings.MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS,
        }
        return TemplateResponse(request, "admin/chats/ingestionreceipt/prune_payloads.html", context)

    def has_prune_permission(self, request: HttpRequest) -> bool:
        # Removing payloads changes receipts: the permission to change them, which only superusers hold.
        return request.user.has_perm("chats.change_ingestionreceipt")


@admin.register(ReceiptPayload)
class ReceiptPayloadAdmin(ReadOnlyAdmin):
    """The bytes receipts name, each stored once; shown as the receipt's page shows them."""

    list_display = ["sha256", "size_bytes", "stored_bytes"]
    search_fields = ["=sha256"]
    ordering = ["sha256"]
    fields = ["sha256", "size_bytes", "stored_bytes", "content_shown"]
    readonly_fields = ["stored_bytes", "content_shown"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReceiptPayload]:
        # The list reads the compressed size, not the bytes.
        queryset: QuerySet[ReceiptPayload] = super().get_queryset(request)
        return queryset.defer("compressed").annotate(stored=Length("compressed"))

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> ReceiptPayload | None:
        # The change page shows the content: read in the payload's query.
        queryset = ReceiptPayload.objects.annotate(stored=Length("compressed"))
        payload: ReceiptPayload | None = _get(queryset, object_id, from_field)
        return payload

    @admin.display(description="stored (compressed) bytes", ordering="stored")
    def stored_bytes(self, obj: ReceiptPayload) -> int:
        return int(getattr(obj, "stored", 0))

    @admin.display(description="content")
    def content_shown(self, obj: ReceiptPayload) -> str:
        return payload_html(obj)


@admin.register(ApiKeyDailyUsage)
class ApiKeyDailyUsageAdmin(ReadOnlyAdmin):
    """What each key sent per UTC day, as MASTERBRAIN_KEY_DAILY_BYTES counts it; counted by ingestion only."""

    list_display = ["day", "api_key", "bytes_received"]
    list_select_related = ["api_key"]
    search_fields = ["api_key__prefix"]
    raw_id_fields = ["api_key"]
    ordering = ["-day", "-bytes_received"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKeyDailyUsage]:
        return super().get_queryset(request).select_related("api_key")
