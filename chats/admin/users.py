"""Users and groups (the roles): Django's own admins, with every change audited, passwords included (only as
changed, never their hash)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminPasswordChangeForm
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.http import HttpRequest, HttpResponse

from chats.admin.base import AuditedModelAdmin
from chats.services.audit import audited

admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(AuditedModelAdmin, UserAdmin[User]):
    """Users as Django manages them; adding, changing (flags, groups, permissions), deleting a user and setting
    their password are each audited (a password only as changed, never its hash)."""

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        stored = self.get_object(request, unquote(id))
        if stored is None:
            return super().user_change_password(request, id, form_url)  # Django's answer to an unknown user
        with audited(stored, actor=request.user):
            response = super().user_change_password(request, id, form_url)
            stored.refresh_from_db()
        return response


@admin.register(Group)
class AuditedGroupAdmin(AuditedModelAdmin, GroupAdmin):
    """Groups are the roles (Reviewers, Auditors); a change to one's permissions is audited."""


class AuditedPasswordChangeForm(AdminPasswordChangeForm):
    """The admin's own "change password" page: the change is audited, with the person as actor."""

    def save(self, commit: bool = True) -> Any:
        stored = User.objects.get(pk=self.user.pk)
        with audited(stored, actor=stored):
            user = super().save(commit=commit)
            stored.refresh_from_db()
        return user


admin.site.password_change_form = AuditedPasswordChangeForm
