"""What the admins here share: a view-only admin for rows that ingestion and the services write, an admin that
audits every write made through it, and a two-choice list filter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.contrib import admin
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.forms import BaseForm, BaseFormSet, ModelForm
from django.http import HttpRequest

from chats.services.audit import audit_snapshot, audited, audited_delete
from chats.storable import unstorable

# Big tables show pages of this many rows, without counting the whole table for the "show all" link.
BIG_TABLE_PAGE_SIZE = 50


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """View only, for everyone (superusers included): the rows are written by ingestion or the services."""

    show_full_result_count = False
    list_per_page = BIG_TABLE_PAGE_SIZE

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        # Every stored field, those no form would show (not editable: ids, hashes, timestamps) included, then the
        # computed ones a subclass declares in readonly_fields.
        opts = self.model._meta
        stored = [field.name for field in (*opts.concrete_fields, *opts.many_to_many)]
        return [*stored, *(name for name in self.readonly_fields if name not in stored)]


class StorableFormMixin(BaseForm):
    """An admin form whose text and JSON values cross the one storable-value boundary (`chats.storable`): a NUL,
    a lone surrogate, a value nested too deep or too long is the field's error, never the database's."""

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        for name, value in list(cleaned.items()):
            if isinstance(value, str | dict | list) and (found := unstorable(value)) is not None:
                self.add_error(name, f"{found.pointer}: {found.reason}" if found.pointer else found.reason)
        return cleaned


class AuditedModelAdmin[M: Model](admin.ModelAdmin[M]):
    """Every add, change and delete made here writes an audit event: the whole row when it is added or deleted
    (with the rows the deletion takes along), and the fields that changed, before and after, when it is changed,
    many-to-many sets included (a user's groups, a group's permissions); a password only as changed. Its forms
    check every stored value (`StorableFormMixin`).

    An admin whose writes are business actions overrides save_model/delete_model to call the service, which
    audits them; this class then records nothing more for them.
    """

    def get_form(
        self, request: HttpRequest, obj: M | None = None, change: bool = False, **kwargs: object
    ) -> type[ModelForm[M]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        return cast("type[ModelForm[M]]", type(form.__name__, (StorableFormMixin, form), {}))

    def save_model(self, request: HttpRequest, obj: M, form: ModelForm[M], change: bool) -> None:
        # Saved in save_related, together with its many-to-many sets, as one audited change; `before` is the
        # stored row, read before the form's values reached `obj`.
        before = audit_snapshot(type(obj)._default_manager.get(pk=obj.pk)) if change else None
        request._audited_save = (obj, before)  # type: ignore[attr-defined]

    def save_related(
        self, request: HttpRequest, form: ModelForm[M], formsets: Sequence[BaseFormSet[BaseForm]], change: bool
    ) -> None:
        pending = request.__dict__.pop("_audited_save", None)
        if pending is None or pending[0] is not form.instance:
            # save_model was a service's (which audits it): only the related rows are left.
            super().save_related(request, form, formsets, change)
            return
        obj, before = pending
        with audited(obj, actor=request.user, before=before):
            super().save_model(request, obj, form, change)
            super().save_related(request, form, formsets, change)

    def delete_model(self, request: HttpRequest, obj: M) -> None:
        audited_delete(obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[M]) -> None:
        with transaction.atomic():
            for obj in queryset:
                audited_delete(obj, actor=request.user)


class YesNoFilter(admin.SimpleListFilter):
    """A filter with two choices: rows matching `condition`, or the others."""

    condition: Q
    yes_label = "Yes"
    no_label = "No"

    def lookups(self, request: HttpRequest, model_admin: object) -> list[tuple[str, str]]:
        return [("yes", self.yes_label), ("no", self.no_label)]

    def queryset[M: Model](self, request: HttpRequest, queryset: QuerySet[M]) -> QuerySet[M]:
        if self.value() == "yes":
            return queryset.filter(self.condition)
        if self.value() == "no":
            return queryset.exclude(self.condition)
        return queryset
