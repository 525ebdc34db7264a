"""Failed sign-ins as django-axes records them, and unlocking: read-only rows, one action that goes through the
audited service. (django-axes' own admin is off: AXES_ENABLE_ADMIN.)"""

from __future__ import annotations

from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import F, Q, QuerySet, Sum, Window
from django.http import HttpRequest
from django.utils import timezone

from chats.admin.base import ReadOnlyAdmin
from chats.services.signin import signin_unlock


@admin.register(AccessAttempt)
class AccessAttemptAdmin(ReadOnlyAdmin):
    """One row per user name, address and browser. A name is locked from an address while its failures there (all
    browsers together) within the window reach the limit; unlocking forgets them, for that address only."""

    list_display = ["username", "ip_address", "failures_since_start", "locked", "attempt_time", "user_agent"]
    search_fields = ["username", "ip_address"]
    fields = ["username", "ip_address", "failures_since_start", "attempt_time", "user_agent", "path_info"]
    ordering = ["-attempt_time"]
    actions = ["unlock"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AccessAttempt]:
        # The failures that count now for the row's name and address, as django-axes sums them: one query.
        cool_off = get_cool_off(request)
        recent = Q(attempt_time__gte=timezone.now() - cool_off) if cool_off is not None else Q()
        failures = Window(Sum("failures_since_start", filter=recent), partition_by=[F("username"), F("ip_address")])
        queryset: QuerySet[AccessAttempt] = super().get_queryset(request).annotate(recent_failures=failures)
        return queryset

    @admin.display(description="locked", boolean=True)
    def locked(self, obj: AccessAttempt) -> bool:
        return bool((obj.recent_failures or 0) >= settings.AXES_FAILURE_LIMIT)

    @admin.action(description="Unlock the selected user names from their addresses", permissions=["unlock"])
    def unlock(self, request: HttpRequest, queryset: QuerySet[AccessAttempt]) -> None:
        pairs = {(name or "", address) for name, address in queryset.values_list("username", "ip_address")}
        for name, address in pairs:
            signin_unlock(username=name, ip_address=address, actor=request.user)
        self.message_user(request, f"Unlocked {len(pairs)} user name(s) from their address.", messages.SUCCESS)

    def has_unlock_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("axes.delete_accessattempt")
