"""The export jobs page and "Run as a job" on the conversation list: a job asked for with the list's filters,
listed with its progress and its download, refreshed in place while under way; each person their own jobs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import AuditEvent, ExportJob, JobState, Source
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_list_offers_the_export_now_and_as_a_job_with_its_filters(reviewer: User, source: Source) -> None:
    make_conversation(source, n_messages=2)
    page = signed_in(reviewer).get("/conversations/?format=chat_document&status=unreviewed&sort=oldest")

    html = page.content.decode()
    # One "Export…" control: one form, one format, "Download now" or "Run as a job".
    export = html.split('id="export"')[1].split("</form>")[0]
    assert 'id="export"' in html and html.count('action="/exports/new/"') == 1
    assert html.count('name="format" id="export-format"') == 1
    assert '<button type="submit" name="run" value="now"' in export and 'name="run" value="job"' in export
    assert export.count('<input type="hidden" name="input_format" value="chat_document">') == 1
    assert export.count('<input type="hidden" name="status" value="unreviewed">') == 1
    assert 'name="sort"' not in export


def test_download_now_is_the_export_api_with_the_lists_filters(
    reviewer: User, source: Source, other_source: Source
) -> None:
    make_conversation(source, n_messages=2)
    make_conversation(other_source, n_messages=2)
    client = signed_in(reviewer)

    response = client.post(
        "/exports/new/", {"format": "openai", "envelope": "true", "source": "masterbrain", "run": "now"}
    )

    assert response.status_code == 303
    assert response["Location"] == "/api/v1/export/?source=masterbrain&format=openai&envelope=true"
    assert not ExportJob.objects.exists()
    download = client.get(response["Location"])
    assert download.status_code == 200 and len(b"".join(download.streaming_content).splitlines()) == 1  # type: ignore[attr-defined]


def test_running_an_export_as_a_job_from_the_list(reviewer: User, source: Source, other_source: Source) -> None:
    make_conversation(source, n_messages=2)
    make_conversation(other_source, n_messages=2)
    client = signed_in(reviewer)

    response = client.post(
        "/exports/new/", {"format": "openai", "envelope": "true", "source": "masterbrain", "sort": "oldest"}
    )

    assert response.status_code == 302 and response["Location"] == "/exports/"
    job = ExportJob.objects.get()
    assert (job.requested_by, job.format, job.envelope, job.filters) == (
        reviewer,
        "openai",
        True,
        {"source": ["masterbrain"]},
    )
    assert (job.state, job.done, job.total) == (JobState.DONE, 1, 1)
    assert AuditEvent.objects.filter(action="export_job.created", target_id=str(job.uuid)).exists()
    page = client.get("/exports/").content.decode()
    assert f'href="/api/v1/export/jobs/{job.uuid}/download/"' in page
    assert "hx-trigger" not in page  # nothing under way: no refresh
    download = client.get(f"/api/v1/export/jobs/{job.uuid}/download/")
    synchronous = client.get("/api/v1/export/?format=openai&envelope=true&source=masterbrain")
    assert b"".join(download.streaming_content) == b"".join(synchronous.streaming_content)  # type: ignore[attr-defined]


def test_a_job_under_way_refreshes_its_row_in_place(reviewer: User) -> None:
    job = ExportJob.objects.create(requested_by=reviewer, format="openai", state=JobState.RUNNING, done=3, total=10)
    client = signed_in(reviewer)

    page = client.get("/exports/").content.decode()
    fragment = client.get("/exports/", headers={"HX-Request": "true"}).content.decode()

    assert 'hx-get="/exports/" hx-trigger="every 2s"' in page
    assert fragment.startswith('<div id="export-jobs"') and "<html" not in fragment
    assert f'data-job="{job.uuid}" data-state="running"' in fragment
    assert '<progress value="3" max="10"' in fragment and "3 / 10" in fragment
    assert "/download/" not in fragment


def test_a_failed_job_shows_its_error(reviewer: User) -> None:
    ExportJob.objects.create(requested_by=reviewer, format="openai", state=JobState.FAILED, error="ValueError: gone")
    page = signed_in(reviewer).get("/exports/").content.decode()
    assert "ValueError: gone" in page and "/download/" not in page


def test_a_person_sees_only_their_own_jobs(reviewer: User, other_reviewer: User, admin_user: User) -> None:
    job = ExportJob.objects.create(requested_by=reviewer, format="openai")
    assert str(job.uuid) in signed_in(reviewer).get("/exports/").content.decode()
    for stranger in (other_reviewer, admin_user):
        assert str(job.uuid) not in signed_in(stranger).get("/exports/").content.decode()


def test_who_may_not_export_gets_no_page_and_makes_no_job(no_role_user: User) -> None:
    assert Client().get("/exports/").status_code == 302
    assert signed_in(no_role_user).get("/exports/").status_code == 403
    assert signed_in(no_role_user).post("/exports/new/", {"format": "openai"}).status_code == 403
    assert signed_in(no_role_user).get("/exports/new/").status_code == 405
    assert not ExportJob.objects.exists()


def test_an_invalid_job_request_is_refused(reviewer: User) -> None:
    response = signed_in(reviewer).post("/exports/new/", {"format": "pdf"})
    assert response.status_code == 400
    assert not ExportJob.objects.exists()


def test_the_page_costs_the_same_queries_for_one_job_and_many(reviewer: User, django_assert_num_queries: Any) -> None:
    client = signed_in(reviewer)
    ExportJob.objects.create(requested_by=reviewer, format="openai")
    with django_assert_num_queries(4):  # session, user, their groups (the roles), jobs
        one = client.get("/exports/")
    for state in (JobState.RUNNING, JobState.DONE, JobState.FAILED):
        ExportJob.objects.create(requested_by=reviewer, format="training", state=state, filters={"score": ["1"]})
    with django_assert_num_queries(4):
        many = client.get("/exports/")
    assert one.content.decode().count("data-job=") == 1 and many.content.decode().count("data-job=") == 4
