"""Ingested data and the audit log cannot be added, changed or deleted through the admin, even by a superuser."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import AuditEvent, Conversation, Feedback, Label, Source
from tests.factories import admin as builders

READ_ONLY = [
    "conversation",
    "message",
    "toolcall",
    "injectedartifact",
    "contextartifactid",
    "ingestionreceipt",
    "feedbacklabel",
    "auditevent",
    "auditcheckpoint",
]


@pytest.fixture
def logged_in_admin(client: Client, admin_user: User, reviewer: User) -> Client:
    builders.world(1, reviewer)
    client.force_login(admin_user)
    return client


def _first_pk(model_name: str) -> int:
    from django.apps import apps

    return int(apps.get_model("chats", model_name)._default_manager.order_by("pk").values_list("pk", flat=True)[0])


def _row_count(model_name: str) -> int:
    from django.apps import apps

    return int(apps.get_model("chats", model_name)._default_manager.count())


@pytest.mark.parametrize("model_name", READ_ONLY)
def test_read_only_list_has_no_add_button_and_the_add_page_is_refused(logged_in_admin: Client, model_name: str) -> None:
    page = logged_in_admin.get(f"/admin/chats/{model_name}/")

    assert page.status_code == 200
    assert f"/admin/chats/{model_name}/add/" not in page.content.decode()
    assert logged_in_admin.get(f"/admin/chats/{model_name}/add/").status_code == 403
    assert logged_in_admin.post(f"/admin/chats/{model_name}/add/", {}).status_code == 403


@pytest.mark.parametrize("model_name", READ_ONLY)
def test_read_only_rows_cannot_be_changed(logged_in_admin: Client, model_name: str) -> None:
    pk = _first_pk(model_name)
    url = f"/admin/chats/{model_name}/{pk}/change/"

    page = logged_in_admin.get(url).content.decode()
    response = logged_in_admin.post(url, {"title": "changed", "text": "changed", "action": "changed"})

    assert 'name="_save"' not in page
    assert response.status_code == 403


@pytest.mark.parametrize("model_name", READ_ONLY)
def test_read_only_rows_cannot_be_deleted(logged_in_admin: Client, model_name: str) -> None:
    pk = _first_pk(model_name)
    before = _row_count(model_name)

    one = logged_in_admin.post(f"/admin/chats/{model_name}/{pk}/delete/", {"post": "yes"})
    bulk = logged_in_admin.post(
        f"/admin/chats/{model_name}/", {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}
    )

    assert one.status_code == 403
    assert bulk.status_code in (200, 302)  # no such action: the list answers "no action selected"
    assert _row_count(model_name) == before


def test_a_conversation_is_unchanged_after_a_change_attempt(logged_in_admin: Client) -> None:
    conversation = Conversation.objects.get()

    logged_in_admin.post(f"/admin/chats/conversation/{conversation.pk}/change/", {"review_status": "reviewed"})

    conversation.refresh_from_db()
    assert conversation.review_status == "unreviewed"


def test_audit_events_cannot_be_changed_or_deleted_even_by_a_superuser(logged_in_admin: Client) -> None:
    event = AuditEvent.objects.order_by("pk").first()
    assert event is not None
    url = f"/admin/chats/auditevent/{event.pk}/"

    assert logged_in_admin.get(f"{url}change/").status_code == 200
    assert logged_in_admin.post(f"{url}change/", {"action": "forged"}).status_code == 403
    assert logged_in_admin.get(f"{url}delete/").status_code == 403
    assert logged_in_admin.post(f"{url}delete/", {"post": "yes"}).status_code == 403
    event.refresh_from_db()
    assert event.action != "forged"


def test_a_superuser_changes_feedback_with_an_audit_entry(logged_in_admin: Client, admin_user: User) -> None:
    feedback = Feedback.objects.get()

    response = logged_in_admin.post(
        f"/admin/chats/feedback/{feedback.pk}/change/", {"score": "-1", "comment": "wrong", "correction": ""}
    )

    assert response.status_code == 302
    feedback.refresh_from_db()
    assert (feedback.score, feedback.comment) == (-1, "wrong")
    assert (feedback.conversation.score_up, feedback.conversation.score_down) == (0, 1)
    event = AuditEvent.objects.get(action="feedback.updated")
    assert (event.actor, event.target_id) == (admin_user, str(feedback.uuid))
    assert event.before is not None and event.after is not None
    assert (event.before["score"], event.after["score"]) == (1, -1)
    assert event.after["labels"] == ["label-0"]


def test_a_superuser_deletes_feedback_with_an_audit_entry(logged_in_admin: Client, admin_user: User) -> None:
    feedback = Feedback.objects.get()

    response = logged_in_admin.post(f"/admin/chats/feedback/{feedback.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Feedback.objects.exists()
    assert Conversation.objects.get().feedback_count == 0
    event = AuditEvent.objects.get(action="feedback.deleted")
    assert event.before is not None
    assert (event.actor, event.before["comment"]) == (admin_user, "<script>0</script>")


def test_feedback_cannot_be_added_through_the_admin(logged_in_admin: Client) -> None:
    assert logged_in_admin.get("/admin/chats/feedback/add/").status_code == 403


def test_labels_are_editable(logged_in_admin: Client) -> None:
    label = Label.objects.get()

    added = logged_in_admin.post("/admin/chats/label/add/", {"name": "hallucination", "description": "Made up."})
    changed = logged_in_admin.post(
        f"/admin/chats/label/{label.pk}/change/", {"name": "renamed", "description": "Better."}
    )

    assert (added.status_code, changed.status_code) == (302, 302)
    assert set(Label.objects.values_list("name", flat=True)) == {"hallucination", "renamed"}


def test_a_source_added_in_the_admin_is_made_by_the_service_and_audited(
    logged_in_admin: Client, admin_user: User
) -> None:
    response = logged_in_admin.post(
        "/admin/chats/source/add/", {"name": "batch-job", "description": "Nightly import", "is_active": "on"}
    )

    assert response.status_code == 302
    source = Source.objects.get(name="batch-job")
    assert (source.description, source.is_active) == ("Nightly import", True)
    event = AuditEvent.objects.get(action="source.created", target_id=str(source.pk))
    assert event.actor == admin_user


# --------------------------------------------------------------------------------------------------------------
# Every audited admin form checks its values through chats.storable


@pytest.mark.parametrize("text", ["\ud800 alone", "a\x00b"])
def test_an_audited_admins_form_refuses_a_value_no_column_can_store(admin_user: User, text: str) -> None:
    from django.contrib import admin as django_admin
    from django.test import RequestFactory

    from chats.models import Source

    request = RequestFactory().post("/admin/chats/source/add/")
    request.user = admin_user
    source_admin = django_admin.site._registry[Source]
    form = source_admin.get_form(request, None, change=False)({"name": "web", "description": text, "is_active": "on"})
    assert not form.is_valid()
    assert "description" in form.errors
    assert not Source.objects.filter(name="web").exists()
