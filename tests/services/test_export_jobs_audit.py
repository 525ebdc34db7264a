"""The audit table's export paths (chats.services.exports, export_jobs and audit_log): exporting conversations,
artifacts or the audit log is recorded, and so are asking for an export job and downloading its result.
The machinery is in tests/security/audit_paths.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import AuditEvent, ExportJob, Source
from chats.services.audit import audit_scope
from chats.services.export_jobs import export_job_execute
from tests.security.audit_paths import World, WritePath, check_write_path, declared_in, expect, make_world, write_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --- Exports: reading data out is recorded too


@write_path("GET api:conversation-export", "service conversation_export", "service export_record")
def api_exports_a_conversation(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get(f"/api/v1/conversations/{w.conversation.uuid}/export/?format=openai")
    assert response.status_code == 200
    after = {"format": "openai", "filters": {}, "count": 1}
    uuid_ = w.conversation.uuid
    return [expect("conversation.exported", w.reviewer, "conversation", uuid_, after=after, conversation=uuid_)]


@write_path("GET api:conversation-export", "service conversation_export", "service export_record")
def api_exports_a_conversation_with_a_source_key(w: World) -> list[dict[str, Any]]:
    response = w.api().get(f"/api/v1/conversations/{w.chat.uuid}/export/?format=chat_document")
    assert response.status_code == 200
    after = {"format": "chat_document", "filters": {}, "count": 1}
    actor = f"source:{w.source.name}"
    return [expect("conversation.exported", actor, "conversation", w.chat.uuid, after=after, conversation=w.chat.uuid)]


@write_path("GET api:artifacts-export", "service artifacts_export_stream", "service export_record")
def api_exports_the_artifact_list(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get("/api/v1/export/artifacts/?kind=protocol")
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).splitlines()  # type: ignore[attr-defined]
    after = {"format": "ndjson", "filters": {"kind": "protocol"}, "count": len(lines)}
    return [expect("conversation.exported", w.reviewer, "artifacts", "filtered", after=after)]


@write_path("GET api:export", "service bulk_export_stream", "service export_record")
def api_exports_a_filtered_set(w: World) -> list[dict[str, Any]]:
    response = w.api(w.reviewer).get("/api/v1/export/?format=training&status=unreviewed")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "training", "filters": {"status": "unreviewed"}, "count": 2}
    return [expect("conversation.exported", w.reviewer, "conversations", "filtered", after=after)]


# --- Export jobs: asking for one is a write; downloading its result is an export, recorded as the others are


def _job_after(format: str, filters: dict[str, Any] | None = None, envelope: bool = False) -> dict[str, Any]:
    return {"format": format, "envelope": envelope, "filters": filters or {}}


@write_path("POST api:export-jobs", "service export_job_create", "service task_send", "service export_job_execute")
def api_asks_for_an_export_job(w: World) -> list[dict[str, Any]]:
    body = {"format": "training", "filters": {"status": "unreviewed", "source": [w.source.name]}}
    response = w.api(w.reviewer).post("/api/v1/export/jobs/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202 and response.json()["state"] == "done"
    after = _job_after("training", {"status": "unreviewed", "source": w.source.name})
    return [expect("export_job.created", w.reviewer, "export_job", response.json()["id"], after=after)]


@write_path("POST api:export-jobs", "service export_job_create")
def api_asks_for_an_export_job_with_a_source_key(w: World) -> list[dict[str, Any]]:
    body = {"format": "openai", "envelope": True}
    response = w.api().post("/api/v1/export/jobs/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202
    after = _job_after("openai", envelope=True)
    return [expect("export_job.created", f"source:{w.source.name}", "export_job", response.json()["id"], after=after)]


@write_path("POST chats:export_job_create", "service export_job_create")
def list_page_runs_an_export_as_a_job(w: World) -> list[dict[str, Any]]:
    response = w.page(w.reviewer).post("/exports/new/", {"format": "openai", "input_format": "chat_document"})
    assert response.status_code == 302
    job = ExportJob.objects.get()
    after = _job_after("openai", {"input_format": "chat_document"})
    return [expect("export_job.created", w.reviewer, "export_job", job.uuid, after=after)]


@write_path("GET api:export-job-download", "service export_job_download_record", "service export_record")
def api_downloads_an_export_job(w: World) -> list[dict[str, Any]]:
    with audit_scope():  # asking for the job is not this path's event
        job = ExportJob.objects.create(requested_by=w.reviewer, format="openai", filters={"status": ["unreviewed"]})
    export_job_execute(job.pk)
    response = w.api(w.reviewer).get(f"/api/v1/export/jobs/{job.uuid}/download/")
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content).splitlines()) == 2  # type: ignore[attr-defined]
    after = {"format": "openai", "filters": {"job": str(job.uuid), "status": "unreviewed"}, "count": 2}
    return [expect("conversation.exported", w.reviewer, "conversations", "filtered", after=after)]


@write_path("GET chats:audit_export", "service audit_log_export_record")
def audit_page_exports_the_log(w: World) -> list[dict[str, Any]]:
    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]
    response = w.page(w.admin).get(f"/audit/export/?format=csv&conversation={w.conversation.uuid}")
    assert response.status_code == 200
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    after = {"format": "csv", "filters": {"conversation": str(w.conversation.uuid)}, "up_to_id": last}
    return [expect("audit.exported", w.admin, "audit_log", "filtered", after=after)]


# --------------------------------------------------------------------------------------------------------------
# Each write path writes exactly its events (after every declaration: it takes the paths declared above)


@pytest.mark.parametrize("path", declared_in(__name__))
def test_the_write_path_writes_exactly_its_audit_events(world: World, path: WritePath) -> None:
    check_write_path(world, path)
