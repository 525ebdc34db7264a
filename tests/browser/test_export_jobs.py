"""Export jobs in a real browser: run the list's export as a job, and watch a job under way finish on the jobs
page without a reload (htmx polling, under the strict Content-Security-Policy)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import ExportJob, JobState, Source
from tests import factories
from tests.browser.conftest import Problems, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_the_lists_export_as_a_job_and_download_it(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    factories.make_conversation(source, title="Gel bands", with_tools=False)
    sign_in(page, live_server.url, "rita", next_path="/conversations/?status=unreviewed")
    page.get_by_text("Export…").click()  # the one export control, folded until asked for
    page.get_by_label("Export format").select_option("training")
    page.get_by_role("button", name="Run as a job").click()
    page.wait_for_url(re.compile(r"/exports/$"))

    row = page.locator("tr[data-job]")
    assert row.count() == 1
    assert "training" in row.inner_text() and "status=unreviewed" in row.inner_text()
    with page.expect_download() as download:
        row.get_by_role("link", name="Download").click()
    assert download.value.suggested_filename == "conversations-training.jsonl"
    job = ExportJob.objects.get()
    assert (job.state, job.filters) == (JobState.DONE, {"status": ["unreviewed"]})


def test_a_job_under_way_finishes_on_the_page_without_a_reload(
    page: Any, live_server: Any, reviewer: User, problems: Problems
) -> None:
    job = ExportJob.objects.create(requested_by=reviewer, format="openai", state=JobState.RUNNING, done=1, total=4)
    sign_in(page, live_server.url, "rita", next_path="/exports/")
    page.locator(f'tr[data-job="{job.uuid}"][data-state="running"]').wait_for()
    page.evaluate("window.notReloaded = true")

    ExportJob.objects.filter(pk=job.pk).update(state=JobState.DONE, done=4)

    page.locator(f'tr[data-job="{job.uuid}"][data-state="done"]').wait_for(timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    assert page.get_by_role("link", name="Download").count() == 1
    assert "4 / 4" in page.locator(f'tr[data-job="{job.uuid}"]').inner_text()
