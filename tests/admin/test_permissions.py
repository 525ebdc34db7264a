"""Reviewers and auditors are not staff; made staff, they see only what their group's permissions allow."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Feedback
from tests.factories import admin as builders


@pytest.fixture
def staff_reviewer(reviewer: User) -> User:
    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    return reviewer


@pytest.mark.parametrize("url", ["/admin/", "/admin/chats/conversation/", "/admin/chats/auditevent/"])
def test_a_reviewer_who_is_not_staff_is_sent_to_the_admin_login(client: Client, reviewer: User, url: str) -> None:
    client.force_login(reviewer)

    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")


def test_an_anonymous_visitor_is_sent_to_the_admin_login(client: Client) -> None:
    response = client.get("/admin/chats/source/")

    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/chats/source/"


@pytest.mark.parametrize(
    "url",
    [
        "/admin/chats/auditevent/",
        "/admin/chats/source/",
        "/admin/chats/apikey/",
        "/admin/chats/ingestionreceipt/",
        "/admin/chats/source/add/",
        "/admin/chats/label/add/",
        "/admin/auth/user/",
        "/admin/auth/group/",
    ],
)
def test_a_staff_reviewer_cannot_open_pages_outside_their_permissions(
    client: Client, staff_reviewer: User, url: str
) -> None:
    client.force_login(staff_reviewer)

    assert client.get(url).status_code == 403


def test_a_staff_reviewer_sees_only_the_models_they_may_view(
    client: Client, staff_reviewer: User, source: object
) -> None:
    client.force_login(staff_reviewer)

    index = client.get("/admin/").content.decode()

    for visible in (
        "conversation",
        "message",
        "toolcall",
        "injectedartifact",
        "contextartifactid",
        "label",
        "feedback",
    ):
        assert f'href="/admin/chats/{visible}/"' in index
    for hidden in ("auditevent", "source", "apikey", "ingestionreceipt", "feedbacklabel"):
        assert f'href="/admin/chats/{hidden}/"' not in index
    assert client.get("/admin/chats/conversation/").status_code == 200


def test_a_staff_reviewer_cannot_change_or_delete_feedback_in_the_admin(
    client: Client, staff_reviewer: User, other_reviewer: User
) -> None:
    builders.world(1, other_reviewer)
    feedback = Feedback.objects.get()
    client.force_login(staff_reviewer)
    url = f"/admin/chats/feedback/{feedback.pk}/"

    assert client.get(f"{url}change/").status_code == 200
    assert client.post(f"{url}change/", {"score": "-1", "comment": "", "correction": ""}).status_code == 403
    assert client.post(f"{url}delete/", {"post": "yes"}).status_code == 403
    feedback.refresh_from_db()
    assert feedback.score == 1


def test_a_staff_auditor_reads_the_audit_log_but_cannot_touch_keys(client: Client, auditor: User) -> None:
    auditor.is_staff = True
    auditor.save(update_fields=["is_staff"])
    client.force_login(auditor)

    assert client.get("/admin/chats/auditevent/").status_code == 200
    assert client.get("/admin/chats/source/").status_code == 200
    assert client.get("/admin/chats/apikey/").status_code == 403
