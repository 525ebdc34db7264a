"""The audit table's feedback paths (chats.services.feedback): giving, changing and deleting feedback on the
review page and through the API. The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Feedback, Source
from tests.factories import last_assistant
from tests.security.audit_paths import (
    WORLD_FEEDBACK,
    World,
    WritePath,
    check_write_path,
    declared_in,
    expect,
    make_world,
    write_path,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- The review page


@write_path("POST chats:feedback_save", "service feedback_submit")
def review_page_gives_feedback(w: World) -> list[dict[str, Any]]:
    answer = last_assistant(w.conversation)
    response = w.page(w.reviewer).post(
        f"/conversations/{w.conversation.uuid}/feedback/",
        {"message": answer.pk, "score": "-1", "labels": ["helpful"], "comment": "Wrong", "correction": "Right."},
    )
    assert response.status_code == 302
    feedback = Feedback.objects.get(author=w.reviewer, message=answer)
    after = {"score": -1, "comment": "Wrong", "correction": "Right.", "labels": ["helpful"], "message": answer.key}
    return [
        expect("feedback.created", w.reviewer, "feedback", feedback.uuid, after=after, conversation=w.conversation.uuid)
    ]


@write_path("POST chats:feedback_save", "service feedback_update")
def review_page_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.page(w.reviewer).post(
        f"/conversations/{w.conversation.uuid}/feedback/",
        {"feedback": w.feedback.uuid, "score": "0", "comment": "On second thoughts"},
    )
    assert response.status_code == 302
    after = before | {"score": 0, "comment": "On second thoughts", "labels": []}
    return [
        expect(
            "feedback.updated",
            w.reviewer,
            "feedback",
            w.feedback.uuid,
            before=before,
            after=after,
            conversation=w.conversation.uuid,
        )
    ]


@write_path("POST chats:feedback_delete", "service feedback_delete")
def review_page_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.page(w.reviewer).post(f"/conversations/{w.conversation.uuid}/feedback/{w.feedback.uuid}/delete/")
    assert response.status_code == 302
    return [
        expect(
            "feedback.deleted", w.reviewer, "feedback", w.feedback.uuid, before=before, conversation=w.conversation.uuid
        )
    ]


# --- The feedback API


@write_path("POST api:feedback-list", "service feedback_submit")
def api_gives_feedback(w: World) -> list[dict[str, Any]]:
    answer = last_assistant(w.conversation)
    body = {"conversation": str(w.conversation.uuid), "message": answer.key, "score": 1, "labels": ["helpful"]}
    response = w.api(w.reviewer).post("/api/v1/feedback/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    after = {"score": 1, "comment": "", "correction": "", "labels": ["helpful"], "message": answer.key}
    return [
        expect(
            "feedback.created",
            w.reviewer,
            "feedback",
            response.json()["uuid"],
            after=after,
            conversation=w.conversation.uuid,
        )
    ]


@write_path("PATCH api:feedback-detail", "service feedback_update")
def api_changes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.api(w.reviewer).patch(
        f"/api/v1/feedback/{w.feedback.uuid}/", data=json.dumps({"score": -1}), content_type="application/json"
    )
    assert response.status_code == 200
    return [
        expect(
            "feedback.updated",
            w.reviewer,
            "feedback",
            w.feedback.uuid,
            before=before,
            after=before | {"score": -1},
            conversation=w.conversation.uuid,
        )
    ]


@write_path("DELETE api:feedback-detail", "service feedback_delete")
def api_deletes_feedback(w: World) -> list[dict[str, Any]]:
    before = WORLD_FEEDBACK
    response = w.api(w.reviewer).delete(f"/api/v1/feedback/{w.feedback.uuid}/")
    assert response.status_code == 204
    return [
        expect(
            "feedback.deleted", w.reviewer, "feedback", w.feedback.uuid, before=before, conversation=w.conversation.uuid
        )
    ]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
