"""A thread that came in through OTLP, in Chromium: each model call shown with its output message, linked to the
team's tracing UI; with MB_SCREENSHOT=1 the picture replaces the README's (docs/screenshot-otel-thread.png)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User

from chats.models import Conversation
from tests.browser.conftest import sign_in
from tests.factories import otlp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_otlp_thread_shows_its_model_calls(
    page: Any, live_server: Any, reviewer: User, ingest_key: str, settings: Any, tmp_path: Path
) -> None:
    settings.MASTERBRAIN_TRACE_URL_TEMPLATE = "https://traces.example.org/trace/{trace_id}?span={span_id}"
    response = httpx.post(
        f"{live_server.url}/api/v1/otel/v1/traces",
        content=json.dumps(otlp.request(*otlp.weather_chat())),
        headers={"Content-Type": "application/json", "Authorization": f"Api-Key {ingest_key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    conversation = Conversation.objects.get()

    page.set_viewport_size({"width": 1400, "height": 1000})
    sign_in(page, live_server.url, reviewer.username, conversation.get_absolute_url())

    calls = page.locator(".model-call")
    assert calls.count() == 2
    assert "250 ms" in calls.first.inner_text() and "150 in / 7 out tokens" in calls.first.inner_text()
    assert (
        calls.first.locator("a.trace-link")
        .get_attribute("href", timeout=5000)
        .startswith("https://traces.example.org/trace/")
    )
    page.evaluate("document.querySelectorAll('.message-item')[1].scrollIntoView({block: 'start'})")
    readme_image = Path(__file__).resolve().parents[2] / "docs" / "screenshot-otel-thread.png"
    target = readme_image if os.environ.get("MB_SCREENSHOT") else tmp_path / "screenshot-otel-thread.png"
    page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000
