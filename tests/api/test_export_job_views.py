"""Export jobs over HTTP: asking for one (done at once without a broker), its progress, its download (the same
bytes as the synchronous export for the same request), who sees which jobs, and the audit trail."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from chats.export import FORMATS
from chats.models import AuditEvent, ExportJob, ExportJobPart, JobState, Source
from chats.selectors import export_jobs as job_selectors
from chats.services import export_jobs
from chats.tasks import exports as export_tasks
from tests.factories import make_conversation, make_labels

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/export/jobs/"


def signed_in(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def keyed(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    return client


def ask(client: APIClient, body: dict[str, Any]) -> Any:
    return client.post(JOBS, data=json.dumps(body), content_type="application/json")


def streamed(response: Any) -> bytes:
    return b"".join(response.streaming_content)


@pytest.fixture
def stored(source: Source, other_source: Source) -> None:
    for number in range(3):
        make_conversation(source, n_messages=4, with_tools=number == 0, title=f"Mine {number}", branches=number % 2)
    make_conversation(other_source, n_messages=2, title="Theirs")


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize(
    ("format", "envelope"), [*((fmt, False) for fmt in sorted(FORMATS)), ("openai", True), ("training", False)]
)
def test_a_job_downloads_the_bytes_the_synchronous_export_streams(auditor: User, format: str, envelope: bool) -> None:
    client = signed_in(auditor)
    response = ask(client, {"format": format, "envelope": envelope, "filters": {"source": "masterbrain"}})

    assert response.status_code == 202, response.json()
    job = response.json()
    assert job["state"] == "done"
    assert job["progress"] == {"done": 3, "total": 3}
    assert response["Location"] == job["url"] == f"{JOBS}{job['id']}/"
    assert job["download_url"] == f"{JOBS}{job['id']}/download/"
    download = client.get(job["download_url"])
    query = f"format={format}&source=masterbrain" + ("&envelope=true" if envelope else "")
    synchronous = client.get(f"/api/v1/export/?{query}")
    assert download.status_code == 200
    assert download["Content-Type"] == synchronous["Content-Type"] == "application/x-ndjson"
    assert download["Content-Disposition"] == synchronous["Content-Disposition"]
    body = streamed(download)
    assert body == streamed(synchronous)
    assert len(body.splitlines()) == 3
    assert job["size"] == len(body)


@pytest.mark.usefixtures("stored")
def test_a_result_is_stored_in_ordered_parts_and_streamed_back_in_order(
    reviewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_jobs, "PART_BYTES", 1)  # a part per conversation
    monkeypatch.setattr(export_jobs, "PROGRESS_EVERY", 1)
    monkeypatch.setattr(job_selectors, "PARTS_PER_READ", 2)  # the download reads more than once
    client = signed_in(reviewer)
    job = ask(client, {"format": "chat_document"}).json()

    stored_job = ExportJob.objects.get(uuid=job["id"])
    parts = list(ExportJobPart.objects.filter(job=stored_job).order_by("index").values_list("index", flat=True))
    assert parts == [0, 1, 2, 3]  # the other source's conversation too: a person reads every source
    body = streamed(client.get(job["download_url"]))
    assert body == streamed(client.get("/api/v1/export/?format=chat_document"))
    assert stored_job.done == stored_job.total == 4
    assert stored_job.started_at is not None and stored_job.finished_at is not None
    assert stored_job.started_at <= stored_job.finished_at


def test_the_task_writes_progress_every_n_conversations(reviewer: User, source: Source) -> None:
    for _ in range(5):
        make_conversation(source, n_messages=2)
    job = ExportJob.objects.create(requested_by=reviewer, format="openai")

    with CaptureQueriesContext(connection) as queries:
        export_jobs.export_job_execute(job.pk, progress_every=2)

    written = [
        int(match.group(1))
        for query in queries.captured_queries
        if query["sql"].startswith('UPDATE "chats_exportjob"') and (match := re.search(r'"done" = (\d+)', query["sql"]))
    ]
    assert written == [0, 2, 4, 5]  # the start, every 2, and the end
    job.refresh_from_db()
    assert (job.state, job.done, job.total) == (JobState.DONE, 5, 5)


@pytest.mark.usefixtures("stored")
def test_a_source_key_exports_its_own_source_only_and_sees_its_own_jobs(
    ingest_key: str, other_ingest_key: str, reviewer: User
) -> None:
    mine = ask(keyed(ingest_key), {"format": "openai"}).json()
    theirs = ask(keyed(other_ingest_key), {"format": "openai"}).json()
    persons = ask(signed_in(reviewer), {"format": "openai"}).json()

    assert mine["progress"] == {"done": 3, "total": 3}
    assert theirs["progress"] == {"done": 1, "total": 1}
    assert streamed(keyed(ingest_key).get(mine["download_url"])) == streamed(
        keyed(ingest_key).get("/api/v1/export/?format=openai")
    )
    assert [job["id"] for job in keyed(ingest_key).get(JOBS).json()["results"]] == [mine["id"]]
    assert [job["id"] for job in signed_in(reviewer).get(JOBS).json()["results"]] == [persons["id"]]
    stored = ExportJob.objects.get(uuid=mine["id"])
    assert stored.source is not None and stored.source.name == "masterbrain" and stored.api_key is not None


@pytest.mark.usefixtures("stored")
def test_a_person_sees_only_their_own_jobs_even_a_superuser(
    reviewer: User, other_reviewer: User, admin_user: User
) -> None:
    job = ask(signed_in(reviewer), {"format": "openai"}).json()

    for stranger in (other_reviewer, admin_user):
        client = signed_in(stranger)
        assert client.get(job["url"]).status_code == 404
        assert client.get(job["download_url"]).status_code == 404
        assert client.get(JOBS).json()["results"] == []
    assert signed_in(reviewer).get(job["url"]).json()["id"] == job["id"]


def test_who_may_not_export_may_not_ask_for_a_job(no_role_user: User) -> None:
    assert ask(APIClient(), {"format": "openai"}).status_code == 401
    assert ask(signed_in(no_role_user), {"format": "openai"}).status_code == 403
    assert signed_in(no_role_user).get(JOBS).status_code == 403
    assert not ExportJob.objects.exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"format": "pdf"}, "/format"),
        ({"format": "openai", "envelope": "yes"}, "/envelope"),
        ({"format": "openai", "filters": {"colour": "red"}}, "/filters/colour"),
        ({"format": "openai", "filters": {"status": "nonsense"}}, "/filters/status"),
        ({"format": "openai", "filters": {"source": "nowhere"}}, "/filters/source"),
        ({"format": "openai", "filters": {"score": 1}}, "/filters/score"),
        ({"format": "openai", "filters": []}, "/filters"),
    ],
)
def test_an_invalid_request_names_what_is_wrong_and_makes_no_job(reviewer: User, body: Any, path: str) -> None:
    response = ask(signed_in(reviewer), body)

    assert response.status_code == 400
    assert path in [error["path"] for error in response.json()["errors"]]
    assert not ExportJob.objects.exists()


def test_filters_repeat_and_select_as_the_synchronous_export_does(reviewer: User, source: Source) -> None:
    helpful, wrong = make_labels("helpful", "wrong")
    from chats.services.feedback import feedback_submit

    first, second, third = (make_conversation(source, n_messages=2) for _ in range(3))
    feedback_submit(author=reviewer, conversation=first, score=1, labels=[helpful])
    feedback_submit(author=reviewer, conversation=second, score=-1, labels=[wrong])
    client = signed_in(reviewer)
    job = ask(client, {"format": "training", "filters": {"score": "1"}}).json()

    assert job["filters"] == {"score": ["1"]}
    assert job["progress"]["total"] == 1
    assert streamed(client.get(job["download_url"])) == streamed(client.get("/api/v1/export/?format=training&score=1"))
    del third


def test_a_failing_job_is_failed_with_its_error_and_has_nothing_to_download(reviewer: User, source: Source) -> None:
    make_conversation(source, n_messages=2)
    label = make_labels("gone")[0]
    client = signed_in(reviewer)
    # The label is removed between the request and the run: the filters no longer validate.
    job = ExportJob.objects.create(requested_by=reviewer, format="openai", filters={"label": [label.name]})
    label.delete()

    export_tasks.export_job_run(job.pk)

    body = client.get(f"{JOBS}{job.uuid}/").json()
    assert body["state"] == "failed"
    assert body["error"].startswith("ValueError: label: Select a valid choice.")
    assert body["download_url"] is None
    assert body["finished_at"] is not None
    download = client.get(f"{JOBS}{job.uuid}/download/")
    assert download.status_code == 409
    assert download.json()["errors"][0]["message"] == "The job is failed: its result is not ready."


def test_a_redelivered_task_leaves_a_done_job_and_restarts_a_running_one(reviewer: User, source: Source) -> None:
    make_conversation(source, n_messages=2)
    job = ask(signed_in(reviewer), {"format": "openai"}).json()
    stored = ExportJob.objects.get(uuid=job["id"])
    done_at, parts = stored.finished_at, list(stored.parts.values_list("pk", flat=True))

    export_tasks.export_job_run(stored.pk)  # delivered again: nothing changes
    stored.refresh_from_db()
    assert (stored.finished_at, list(stored.parts.values_list("pk", flat=True))) == (done_at, parts)

    # A worker died mid-way: the job is running with a partial part.
    ExportJob.objects.filter(pk=stored.pk).update(state=JobState.RUNNING, done=0)
    ExportJobPart.objects.filter(job=stored).update(data=b"partial")
    export_tasks.export_job_run(stored.pk)
    stored.refresh_from_db()
    assert stored.state == JobState.DONE and stored.attempt == 2
    assert b"".join(bytes(data) for data in stored.parts.order_by("index").values_list("data", flat=True)) == (
        streamed(signed_in(reviewer).get("/api/v1/export/?format=openai"))
    )


def test_asking_for_a_job_and_downloading_it_are_audited(reviewer: User, source: Source) -> None:
    make_conversation(source, n_messages=2)
    client = signed_in(reviewer)
    job = ask(client, {"format": "openai", "filters": {"source": "masterbrain"}}).json()
    created = AuditEvent.objects.get(action="export_job.created")
    assert (created.actor_username, created.target_type, created.target_id) == ("rita", "export_job", job["id"])
    assert created.after == {"format": "openai", "envelope": False, "filters": {"source": "masterbrain"}}
    assert not AuditEvent.objects.filter(action="conversation.exported").exists()

    streamed(client.get(job["download_url"]))
    exported = AuditEvent.objects.get(action="conversation.exported")
    assert exported.after == {"format": "openai", "filters": {"job": job["id"], "source": "masterbrain"}, "count": 1}


@pytest.mark.usefixtures("stored")
def test_the_job_list_costs_the_same_queries_for_one_job_and_many(
    reviewer: User, django_assert_num_queries: Any
) -> None:
    client = signed_in(reviewer)
    ask(client, {"format": "openai"})
    with django_assert_num_queries(4):  # session, user, their groups (the role check), jobs
        one = client.get(JOBS)
    for _ in range(4):
        ask(client, {"format": "openai"})
    with django_assert_num_queries(4):
        many = client.get(JOBS)
    assert len(one.json()["results"]) == 1 and len(many.json()["results"]) == 5


def test_a_transient_database_error_retries_the_task_which_then_finishes_the_job(
    reviewer: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_conversation(source, n_messages=2)
    job = ExportJob.objects.create(requested_by=reviewer, format="openai")
    real = job_selectors.job_export
    failures = [OperationalError("the server closed the connection unexpectedly")]

    def once_unreachable(job: ExportJob) -> Any:
        if failures:
            raise failures.pop()
        return real(job)

    monkeypatch.setattr(export_jobs, "job_export", once_unreachable)
    monkeypatch.setattr(export_tasks.export_job_run, "retry_backoff", False)

    export_tasks.export_job_run.apply(args=(job.pk,), throw=False)

    job.refresh_from_db()
    assert not failures
    assert (job.state, job.attempt, job.done, job.error) == (JobState.DONE, 2, 1, "")
