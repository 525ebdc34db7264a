"""The audit table's admin paths (chats.admin): keys, sources, labels, feedback, sign-in lockouts, users and
roles, and receipts. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from axes.models import AccessAttempt
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, User
from django.test import Client

from chats.models import ApiKey, IngestionReceipt, Label, Source
from tests.security.audit_paths import (
    NEW_PASSWORD,
    PASSWORD,
    WORLD_FEEDBACK,
    World,
    WritePath,
    admin_post,
    check_write_path,
    declared_in,
    expect,
    make_world,
    pruned,
    user_row,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- The admin: keys, sources, labels, feedback


def _bulk_action(w: World, model: str, action: str, pks: list[Any]) -> Any:
    return admin_post(w, f"/admin/{model}/", {"action": action, "_selected_action": pks, "post": "yes"})


@write_path("admin:chats_source_create_key", "service api_key_create")
def admin_creates_a_key(w: World) -> list[dict[str, Any]]:
    admin_post(w, f"/admin/chats/source/{w.source.pk}/create-key/", {"name": "ci runner"})
    key = ApiKey.objects.get(name="ci runner")
    after = {"owner": f"source:{w.source.name}", "prefix": key.prefix, "name": "ci runner", "expires_at": None}
    return [expect("api_key.created", w.admin, "api_key", key.pk, after=after)]


@write_path("admin chats.apikey action revoke_keys", "service api_key_revoke")
def admin_revokes_keys(w: World) -> list[dict[str, Any]]:
    key = ApiKey.objects.get(source=w.source)
    _bulk_action(w, "chats/apikey", "revoke_keys", [key.pk])
    return [expect("api_key.revoked", w.admin, "api_key", key.pk, before={"revoked": False}, after={"revoked": True})]


@write_path("admin chats.source add", "service source_get_or_create")
def admin_adds_a_source(w: World) -> list[dict[str, Any]]:
    admin_post(w, "/admin/chats/source/add/", {"name": "batch-job", "description": "Nightly", "is_active": "on"})
    source = Source.objects.get(name="batch-job")
    after = {"name": "batch-job", "description": "Nightly", "is_active": True}
    return [expect("source.created", w.admin, "source", source.pk, after=after)]


@write_path("admin chats.source change", "service source_update")
def admin_changes_a_source(w: World) -> list[dict[str, Any]]:
    admin_post(w, f"/admin/chats/source/{w.source.pk}/change/", {"description": "Paused", "name": "renamed"})
    w.source.refresh_from_db()
    assert (w.source.name, w.source.is_active) == ("masterbrain", False)  # the name is set once
    before, after = {"description": "", "is_active": True}, {"description": "Paused", "is_active": False}
    return [expect("source.updated", w.admin, "source", w.source.pk, before=before, after=after)]


def _spare_source_row(w: World) -> dict[str, Any]:
    return {"id": w.spare_source.pk, "name": "spare-source", "description": "", "is_active": True, "created_at": ANY}


@write_path("admin chats.source delete")
def admin_deletes_a_source(w: World) -> list[dict[str, Any]]:
    before = _spare_source_row(w)
    admin_post(w, f"/admin/chats/source/{w.spare_source.pk}/delete/", {"post": "yes"})
    assert not Source.objects.filter(pk=w.spare_source.pk).exists()
    return [expect("source.deleted", w.admin, "source", w.spare_source.pk, before=before)]


@write_path("admin chats.source action delete_selected")
def admin_deletes_selected_sources(w: World) -> list[dict[str, Any]]:
    before = _spare_source_row(w)
    _bulk_action(w, "chats/source", "delete_selected", [w.spare_source.pk])
    assert not Source.objects.filter(pk=w.spare_source.pk).exists()
    return [expect("source.deleted", w.admin, "source", w.spare_source.pk, before=before)]


@write_path("admin chats.label add", "service label_create")
def admin_adds_a_label(w: World) -> list[dict[str, Any]]:
    admin_post(w, "/admin/chats/label/add/", {"name": "hallucination", "description": "Made up."})
    label = Label.objects.get(name="hallucination")
    after = {"name": "hallucination", "description": "Made up."}
    return [expect("label.created", w.admin, "label", label.pk, after=after)]


@write_path("admin chats.label change", "service label_update")
def admin_renames_a_label(w: World) -> list[dict[str, Any]]:
    admin_post(w, f"/admin/chats/label/{w.label.pk}/change/", {"name": "solved", "description": "Solved it."})
    before = {"name": "helpful", "description": "Solved it."}
    after = {"name": "solved", "description": "Solved it."}
    return [expect("label.updated", w.admin, "label", w.label.pk, before=before, after=after)]


@write_path("admin chats.label delete", "service label_delete")
def admin_deletes_a_label(w: World) -> list[dict[str, Any]]:
    admin_post(w, f"/admin/chats/label/{w.spare_label.pk}/delete/", {"post": "yes"})
    before = {"name": "spare", "description": "Unused."}
    return [expect("label.deleted", w.admin, "label", w.spare_label.pk, before=before)]


@write_path("admin chats.label action delete_selected", "service label_delete")
def admin_deletes_selected_labels(w: World) -> list[dict[str, Any]]:
    _bulk_action(w, "chats/label", "delete_selected", [w.spare_label.pk])
    before = {"name": "spare", "description": "Unused."}
    return [expect("label.deleted", w.admin, "label", w.spare_label.pk, before=before)]


@write_path("admin chats.feedback change", "service feedback_update")
def admin_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    admin_post(w, f"/admin/chats/feedback/{w.feedback.pk}/change/", {"score": "-1", "comment": "No.", "correction": ""})
    after = before | {"score": -1, "comment": "No."}
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.updated", w.admin, "feedback", f.uuid, before=before, after=after, conversation=uuid_)]


@write_path("admin chats.feedback delete", "service feedback_delete")
def admin_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    admin_post(w, f"/admin/chats/feedback/{w.feedback.pk}/delete/", {"post": "yes"})
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.deleted", w.admin, "feedback", f.uuid, before=before, conversation=uuid_)]


@write_path("admin chats.feedback action delete_selected", "service feedback_delete")
def admin_deletes_selected_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    _bulk_action(w, "chats/feedback", "delete_selected", [w.feedback.pk])
    f, uuid_ = w.feedback, w.conversation.uuid
    return [expect("feedback.deleted", w.admin, "feedback", f.uuid, before=before, conversation=uuid_)]


# --- The admin: sign-in lockouts


@write_path("admin axes.accessattempt action unlock", "service signin_unlock")
def admin_unlocks_a_user_name_from_an_address(w: World) -> list[dict[str, Any]]:
    # Failed sign-ins are django-axes' records (not audited, like sessions); lifting them is audited.
    for spelling in (w.reviewer.username, w.reviewer.username.upper()):
        response = Client().post(
            "/accounts/login/", {"username": spelling, "password": "wrong"}, REMOTE_ADDR="192.0.2.1"
        )
        assert response.status_code == 200
    attempts = AccessAttempt.objects.filter(username=w.reviewer.username)
    _bulk_action(w, "axes/accessattempt", "unlock", list(attempts.values_list("pk", flat=True)))
    assert not attempts.exists()
    before, after = {"ip_address": "192.0.2.1", "failures": 2}, {"ip_address": "192.0.2.1", "failures": 0}
    return [expect("signin.unlocked", w.admin, "signin", w.reviewer.username, before=before, after=after)]


# --- The admin: users and roles


@write_path("admin auth.user add")
def admin_adds_a_user(w: World) -> list[dict[str, Any]]:
    admin_post(
        w,
        "/admin/auth/user/add/",
        {"username": "newbie", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    user = User.objects.get(username="newbie")
    return [expect("user.created", w.admin, "user", user.pk, after=user_row(user))]


def _user_form(user: User, **changes: Any) -> dict[str, Any]:
    joined = user.date_joined
    return {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "date_joined_0": f"{joined:%Y-%m-%d}",
        "date_joined_1": f"{joined:%H:%M:%S}",
        "last_login_0": "",
        "last_login_1": "",
    } | changes


@write_path("admin auth.user change")
def admin_changes_a_users_roles_and_flags(w: World) -> list[dict[str, Any]]:
    reviewers = Group.objects.get(name="Reviewers")
    form = _user_form(w.other_user, is_active="", is_staff="on", is_superuser="on", groups=[reviewers.pk])
    admin_post(w, f"/admin/auth/user/{w.other_user.pk}/change/", form)
    before = {"is_active": True, "is_staff": False, "is_superuser": False, "groups": []}
    after = {"is_active": False, "is_staff": True, "is_superuser": True, "groups": ["Reviewers"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin auth.user change")
def admin_gives_a_user_a_permission(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permission = Permission.objects.get(codename="view_conversation")
    form = _user_form(w.other_user, user_permissions=[permission.pk])
    admin_post(w, f"/admin/auth/user/{w.other_user.pk}/change/", form)
    before: dict[str, list[str]] = {"user_permissions": []}
    after = {"user_permissions": ["chats.view_conversation"]}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin:auth_user_password_change")
def admin_sets_a_users_password(w: World) -> list[dict[str, Any]]:
    url = f"/admin/auth/user/{w.other_user.pk}/password/"
    admin_post(w, url, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"})
    w.other_user.refresh_from_db()
    assert w.other_user.check_password(NEW_PASSWORD)
    before, after = {"password": "(set)"}, {"password": "(changed)"}
    return [expect("user.updated", w.admin, "user", w.other_user.pk, before=before, after=after)]


@write_path("admin:password_change")
def admin_changes_their_own_password(w: World) -> list[dict[str, Any]]:
    data = {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    response = w.page(w.admin).post("/admin/password_change/", data)
    assert response.status_code == 302, response.content[:2000]
    before, after = {"password": "(set)"}, {"password": "(changed)"}
    return [expect("user.updated", w.admin, "user", w.admin.pk, before=before, after=after)]


def _log_entry_of(user: User) -> int:
    return LogEntry.objects.get(user=user).pk


@write_path("admin auth.user delete")
def admin_deletes_a_user(w: World) -> list[dict[str, Any]]:
    before = user_row(w.other_user, also_deleted={"admin.logentry": [_log_entry_of(w.other_user)]})
    admin_post(w, f"/admin/auth/user/{w.other_user.pk}/delete/", {"post": "yes"})
    assert not User.objects.filter(pk=w.other_user.pk).exists()
    return [expect("user.deleted", w.admin, "user", w.other_user.pk, before=before)]


@write_path("admin auth.user action delete_selected")
def admin_deletes_selected_users(w: World) -> list[dict[str, Any]]:
    before = user_row(w.other_user, also_deleted={"admin.logentry": [_log_entry_of(w.other_user)]})
    _bulk_action(w, "auth/user", "delete_selected", [w.other_user.pk])
    assert not User.objects.filter(pk=w.other_user.pk).exists()
    return [expect("user.deleted", w.admin, "user", w.other_user.pk, before=before)]


@write_path("admin auth.group add")
def admin_adds_a_group(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permission = Permission.objects.get(codename="view_conversation")
    admin_post(w, "/admin/auth/group/add/", {"name": "Readers", "permissions": [permission.pk]})
    group = Group.objects.get(name="Readers")
    after = {"id": group.pk, "name": "Readers", "permissions": ["chats.view_conversation"]}
    return [expect("group.created", w.admin, "group", group.pk, after=after)]


@write_path("admin auth.group change")
def admin_changes_a_groups_permissions(w: World) -> list[dict[str, Any]]:
    from django.contrib.auth.models import Permission

    permissions = Permission.objects.filter(codename__in=["view_conversation", "export_conversation"])
    data = {"name": "Editors", "permissions": [p.pk for p in permissions]}
    admin_post(w, f"/admin/auth/group/{w.group.pk}/change/", data)
    after = {"permissions": ["chats.export_conversation", "chats.view_conversation"]}
    return [expect("group.updated", w.admin, "group", w.group.pk, before={"permissions": []}, after=after)]


@write_path("admin auth.group delete")
def admin_deletes_a_group(w: World) -> list[dict[str, Any]]:
    admin_post(w, f"/admin/auth/group/{w.group.pk}/delete/", {"post": "yes"})
    before = {"id": w.group.pk, "name": "Editors", "permissions": []}
    return [expect("group.deleted", w.admin, "group", w.group.pk, before=before)]


@write_path("admin auth.group action delete_selected")
def admin_deletes_selected_groups(w: World) -> list[dict[str, Any]]:
    _bulk_action(w, "auth/group", "delete_selected", [w.group.pk])
    before = {"id": w.group.pk, "name": "Editors", "permissions": []}
    return [expect("group.deleted", w.admin, "group", w.group.pk, before=before)]


# --- The admin: receipts


@write_path("admin chats.ingestionreceipt action prune_payloads", "service receipt_payloads_prune")
def admin_prunes_the_payloads_of_selected_receipts(w: World) -> list[dict[str, Any]]:
    receipt = IngestionReceipt.objects.get(conversation=w.chat)
    form = {"action": "prune_payloads", "_selected_action": [receipt.pk], "older_than_days": "0"}
    preview = admin_post(w, "/admin/chats/ingestionreceipt/", form)
    assert b"1 receipt created before" in preview.content  # the count, before anything is removed
    assert IngestionReceipt.objects.get(pk=receipt.pk).payload_id is not None
    admin_post(w, "/admin/chats/ingestionreceipt/", {**form, "apply": "yes"})
    return [pruned(w, receipt, 0, "selected", w.admin)]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
