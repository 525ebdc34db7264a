"""Sources and their API keys: a source is added and changed through the services, a key is created from its
source's page (shown once) and revoked from the key list, never edited or deleted."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.timesince import timesince

from chats.admin.base import AuditedModelAdmin, ReadOnlyAdmin, YesNoFilter
from chats.models import ApiKey, ApiKeyDailyUsage, Source
from chats.selectors.ingest_queue import with_queue_health
from chats.services.sources import api_key_create, api_key_revoke, source_get_or_create, source_update
from chats.throttling import utc_today

# The key's page shows what it sent on this many UTC days, today included.
USAGE_DAYS_SHOWN = 7


class CreateApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="What the key is for, e.g. the host using it.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, help_text="Leave empty for a key that does not expire."
    )

    def expires_at(self) -> datetime | None:
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=days) if days else None


@admin.register(Source)
class SourceAdmin(AuditedModelAdmin[Source]):
    list_display = ["name", "is_active", "created_at", "queued", "oldest_queued"]
    list_filter = ["is_active"]
    search_fields = ["name"]
    fields = ["name", "description", "is_active", "created_at", "api_keys"]
    readonly_fields = ["created_at", "api_keys"]

    def get_urls(self) -> list[URLPattern]:
        create_key = path(
            "<int:object_id>/create-key/",
            self.admin_site.admin_view(self.create_key_view),
            name="chats_source_create_key",
        )
        return [create_key, *super().get_urls()]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Source]:
        # The asynchronous ingest queue's depth and age, per source, in the list's own query.
        return with_queue_health(super().get_queryset(request))

    @admin.display(description="queued receipts", ordering="queued")
    def queued(self, obj: Source) -> int:
        return int(getattr(obj, "queued", 0))

    @admin.display(description="oldest queued for", ordering="oldest_queued_at")
    def oldest_queued(self, obj: Source) -> str:
        """How long the source's oldest queued receipt has waited (a worker or a document stuck when it grows)."""
        oldest = getattr(obj, "oldest_queued_at", None)
        return timesince(oldest) if oldest is not None else self.get_empty_value_display()

    def get_readonly_fields(self, request: HttpRequest, obj: Source | None = None) -> list[str]:
        # A source is known by its name (create_source, the audit trail's "source:<name>"): set once.
        return [*self.readonly_fields, "name"] if obj is not None else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: Source, form: forms.ModelForm[Source], change: bool) -> None:
        # Sources are written by the services, which audit every change (a deletion is audited by the base class).
        with transaction.atomic():
            if change:
                stored = Source.objects.select_for_update().get(pk=obj.pk)
            else:
                stored, created = source_get_or_create(
                    name=obj.name, description=obj.description, is_active=obj.is_active, actor=request.user
                )
                obj.pk, obj.created_at = stored.pk, stored.created_at
                if created:
                    return
            source_update(source=stored, description=obj.description, is_active=obj.is_active, actor=request.user)

    @admin.display(description="API keys")
    def api_keys(self, obj: Source) -> str:
        """The source's keys, newest first, each linking to its own page (where it can be revoked)."""
        if obj.pk is None:
            return self.get_empty_value_display()
        keys = list(obj.api_keys.order_by("-created_at"))
        return render_to_string("admin/chats/source/_api_keys.html", {"keys": keys})

    def create_key_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET: a form. POST: create a key for the source and show it, this one time only."""
        source = get_object_or_404(Source, pk=object_id)
        if not (self.has_view_permission(request, source) and request.user.has_perm("chats.add_apikey")):
            raise PermissionDenied
        form = CreateApiKeyForm(request.POST if request.method == "POST" else None)
        raw_key = None
        key = None
        if request.method == "POST" and form.is_valid():
            key, raw_key = api_key_create(
                source=source, name=form.cleaned_data["name"], expires_at=form.expires_at(), actor=request.user
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Create an API key for {source}",
            "opts": self.opts,
            "original": source,
            "source": source,
            "form": form,
            "api_key": key,
            "raw_key": raw_key,
        }
        response = TemplateResponse(request, "admin/chats/source/create_key.html", context)
        # The key must not be kept by a browser or proxy cache (admin_view already adds no-cache headers).
        response["Cache-Control"] = "no-store"
        return response


class RevokedFilter(YesNoFilter):
    title = parameter_name = "revoked"
    condition = Q(revoked_at__isnull=False)
    yes_label, no_label = "Revoked", "Usable"


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    """Keys are made by the service (from a source's page) and revoked, never edited or deleted (revoked, a key
    stays on record with its receipts); no hash shown."""

    list_display = ["prefix", "owner", "name", "created_at", "last_used_at", "expires_at", "revoked", "sent_today"]
    list_select_related = ["source", "user"]
    list_filter = [RevokedFilter, "source"]
    search_fields = ["prefix", "name", "source__name", "user__username"]
    fields = ["prefix", "source", "user", "name", "created_at", "last_used_at", "expires_at", "revoked_at", "usage"]
    readonly_fields = ["usage"]
    actions = ["revoke_keys"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKey]:
        today = ApiKeyDailyUsage.objects.filter(api_key=OuterRef("pk"), day=utc_today()).values("bytes_received")
        queryset: QuerySet[ApiKey] = super().get_queryset(request).select_related("source", "user")
        return queryset.annotate(bytes_today=Subquery(today))

    @admin.display(description="sent today (UTC)", ordering="bytes_today")
    def sent_today(self, obj: ApiKey) -> str:
        return filesizeformat(getattr(obj, "bytes_today", None) or 0)

    @admin.display(description="bytes sent (MASTERBRAIN_KEY_DAILY_BYTES)")
    def usage(self, obj: ApiKey) -> str:
        """Today's bytes against the daily quota, and the last days'."""
        if obj.pk is None:
            return self.get_empty_value_display()
        today = utc_today()
        used = getattr(obj, "bytes_today", None) or 0
        quota = settings.MASTERBRAIN_KEY_DAILY_BYTES
        days = obj.daily_usage.filter(day__gt=today - timedelta(days=USAGE_DAYS_SHOWN)).order_by("-day")
        context = {
            "today": today,
            "used": used,
            "quota": quota,
            "percent": round(100 * used / quota, 1) if quota else None,
            "remaining": max(quota - used, 0) if quota else None,
            "days": list(days.values_list("day", "bytes_received")),
            "days_shown": USAGE_DAYS_SHOWN,
        }
        return render_to_string("admin/chats/apikey/_usage.html", context)

    @admin.display(description="owner")
    def owner(self, obj: ApiKey) -> str:
        if obj.source is not None:
            return f"source: {obj.source}"
        return f"user: {obj.user}"

    @admin.display(description="revoked", boolean=True)
    def revoked(self, obj: ApiKey) -> bool:
        return obj.is_revoked

    @admin.action(description="Revoke the selected API keys", permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(key=key, actor=request.user)
            count += 1
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("chats.change_apikey")
