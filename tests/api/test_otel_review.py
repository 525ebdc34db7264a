"""What reviewers see of a conversation that came in through OTLP: each model call's latency, token usage, finish
reason and trace/span ids (linked with MASTERBRAIN_TRACE_URL_TEMPLATE) on the thread page and in the API, the
"given to the model" panel filled from the request attributes and tool definitions, the list filtered by provider
and token usage, and the exports in every format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from chats.export import FORMATS
from chats.models import Conversation
from tests.factories import otlp

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(ingest_client: APIClient) -> Conversation:
    response = ingest_client.post(
        "/api/v1/otel/v1/traces", data=json.dumps(otlp.request(*otlp.weather_chat())), content_type="application/json"
    )
    assert response.status_code == 200
    return Conversation.objects.get()


@pytest.fixture
def page(client: Client, reviewer: Any) -> Client:
    client.force_login(reviewer)
    return client


def test_the_thread_page_shows_each_model_call_with_a_link_to_its_trace(conversation, page, settings):
    settings.MASTERBRAIN_TRACE_URL_TEMPLATE = "https://traces.example.org/trace/{trace_id}?span={span_id}"
    call = conversation.model_calls.order_by("started_at").first()

    html = page.get(f"/conversations/{conversation.uuid}/").content.decode()

    assert html.count('class="model-call') == 2
    assert "250 ms" in html and "150 in / 7 out tokens" in html and 'finish: <span class="finish">tool_calls' in html
    assert f'href="https://traces.example.org/trace/{call.trace_id}?span={call.span_id}"' in html


def test_without_a_template_the_ids_are_shown_without_a_link(conversation, page):
    html = page.get(f"/conversations/{conversation.uuid}/").content.decode()

    assert "trace-link" not in html
    assert conversation.model_calls.first().trace_id in html


def test_the_thread_api_gives_each_output_message_its_model_call(conversation, api_client, reviewer, settings):
    settings.MASTERBRAIN_TRACE_URL_TEMPLATE = "https://traces.example.org/{trace_id}"
    api_client.force_login(reviewer)

    messages = api_client.get(f"/api/v1/conversations/{conversation.uuid}/").json()["messages"]

    calls = [m["model_call"] for m in messages]
    assert calls[:2] == [None, None] and calls[3] is None
    first, last = calls[2], calls[4]
    assert first["latency_ms"] == 250 and first["input_tokens"] == 150 and first["output_tokens"] == 7
    assert first["finish_reasons"] == ["tool_calls"] and last["finish_reasons"] == ["stop"]
    assert first["provider"] == "openai" and first["model"] == "gpt-4o-2024-08-06"
    assert first["trace_url"] == f"https://traces.example.org/{first['trace_id']}"


def test_the_given_panel_shows_the_model_its_settings_and_the_tools_offered(conversation, page):
    html = page.get(f"/conversations/{conversation.uuid}/").content.decode()
    given = html[html.index('id="given"') :] if 'id="given"' in html else html

    assert "gpt-4o" in given and "temperature" in given and "0.2" in given
    assert "get_weather" in given and "The weather in a city" in given and "the request&#39;s tools list" in given


def test_the_list_filters_by_provider_and_token_usage(conversation, ingest_client, api_client, reviewer):
    other = otlp.request(*otlp.weather_chat(2, **{"gen_ai.provider.name": "anthropic", "session.id": "s2"}))
    ingest_client.post("/api/v1/otel/v1/traces", data=json.dumps(other), content_type="application/json")
    api_client.force_login(reviewer)

    def listed(query: str) -> list[str]:
        response = api_client.get(f"/api/v1/conversations/?{query}")
        assert response.status_code == 200, response.content
        return [row["uuid"] for row in response.json()["results"]]

    assert listed("provider=openai") == [str(conversation.uuid)]
    assert len(listed("provider=anthropic")) == 1
    # The first chat used 150 + 7 and 160 + 7 tokens (324), the second 250 + 7 and 260 + 7 (524).
    assert listed("tokens_min=324&tokens_max=324") == [str(conversation.uuid)]
    assert len(listed("tokens_min=325")) == 1 and listed("tokens_max=323") == []
    assert api_client.get("/api/v1/conversations/?tokens_min=%D9%A1").status_code == 400


@pytest.mark.parametrize("format", FORMATS)
def test_an_otlp_conversation_exports_in_every_format(conversation, api_client, auditor, format):
    api_client.force_login(auditor)

    response = api_client.get(f"/api/v1/conversations/{conversation.uuid}/export/?format={format}")

    assert response.status_code == 200
    assert "It is rainy in Paris." in response.content.decode()


@pytest.mark.parametrize(
    "template",
    ["https://traces.example.org/{trace}", "javascript:alert({trace_id})", "https://t.example.org/{span_id}", "{"],
)
def test_a_trace_url_template_that_cannot_link_a_trace_stops_the_process(tmp_path, template):
    from tests.test_settings import run_check

    result = run_check(tmp_path, DEBUG="1", MASTERBRAIN_TRACE_URL_TEMPLATE=template)

    assert result.returncode == 2 and "MASTERBRAIN_TRACE_URL_TEMPLATE" in result.stderr
