"""Users and groups (the roles): Django's own admins, with every change audited, passwords included (only as
changed, never their hash)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.contrib.admin.forms import AdminPasswordChangeForm
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from chats.admin.base import AuditedModelAdmin
from chats.services.audit import audited
from chats.services.people import ROLES, person_roles_of, person_roles_set

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec

admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(AuditedModelAdmin[User], UserAdmin[User]):
    """Users as Django manages them; adding, changing (flags, groups, permissions), deleting a user and setting
    their password are each audited (a password only as changed, never its hash). The list and the page show each
    person's roles; the actions give the selected people exactly one role (chats.services.people, audited as the
    `set_role` command is), keeping their other groups."""

    list_display = ("username", "email", "first_name", "last_name", "is_staff", "roles")
    actions = [f"set_role_{role}" for role in ROLES]

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return super().get_queryset(request).prefetch_related("groups")  # the roles column: one query a page

    def get_readonly_fields(self, request: HttpRequest, obj: User | None = None) -> tuple[str, ...]:
        return (*super().get_readonly_fields(request, obj), "roles")

    def get_fieldsets(self, request: HttpRequest, obj: User | None = None) -> _FieldsetSpec:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        # The roles first among the permissions: what the groups and flags below make of this person.
        return [
            (name, {**options, "fields": ("roles", *options["fields"])} if name == "Permissions" else options)
            for name, options in fieldsets
        ]

    @admin.display(description="Roles")
    def roles(self, user: User) -> str:
        return ", ".join(person_roles_of(user)) or "none"

    def _set_role(self, request: HttpRequest, queryset: QuerySet[User], role: str) -> None:
        for user in queryset:
            person_roles_set(user=user, roles=[role], actor=request.user)
        self.message_user(request, f"{len(queryset)} made {role}.", messages.SUCCESS)

    @admin.action(description="Make the selected people reviewers (only)", permissions=["change"])
    def set_role_reviewer(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_role(request, queryset, "reviewer")

    @admin.action(description="Make the selected people leads (only)", permissions=["change"])
    def set_role_lead(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_role(request, queryset, "lead")

    @admin.action(description="Make the selected people auditors (only)", permissions=["change"])
    def set_role_auditor(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_role(request, queryset, "auditor")

    @admin.action(description="Make the selected people admins (superusers)", permissions=["change"])
    def set_role_admin(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_role(request, queryset, "admin")

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        stored = self.get_object(request, unquote(id))
        if stored is None:
            return super().user_change_password(request, id, form_url)  # Django's answer to an unknown user
        with audited(stored, actor=request.user):
            response = super().user_change_password(request, id, form_url)
            stored.refresh_from_db()
        return response


@admin.register(Group)
class AuditedGroupAdmin(AuditedModelAdmin[Group], GroupAdmin):
    """Groups are the roles (Reviewers, Auditors); a change to one's permissions is audited."""


class AuditedPasswordChangeForm(AdminPasswordChangeForm):
    """The admin's own "change password" page: the change is audited, with the person as actor."""

    def save(self, commit: bool = True) -> User:
        stored = User.objects.get(pk=self.user.pk)
        with audited(stored, actor=stored):
            user = super().save(commit=commit)
            stored.refresh_from_db()
        return user


admin.site.password_change_form = AuditedPasswordChangeForm
