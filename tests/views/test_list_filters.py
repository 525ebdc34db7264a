"""The auditors' filters on the list page: offered by its form, kept in the pager's links, and their errors shown
next to the field (the API and export sides are in tests/api/test_conversation_filters.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Source
from tests.factories import ingest, make_messages

pytestmark = pytest.mark.django_db


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def thinking(source: Source, number: int, *, enable_thinking: bool) -> None:
    ingest(
        source,
        {
            "chat_id": f"chat-{enable_thinking}-{number}",
            "model": {"name": "qwen3.5-flash", "enable_thinking": enable_thinking},
            "scenario": {"workflow": "protocol_qa"},
            "main_messages": make_messages(2, with_tools=False),
        },
        format="chat_document",
    )


def test_the_form_offers_every_new_filter_with_its_choices(client: Client, reviewer: User) -> None:
    html = signed_in(client, reviewer).get("/conversations/").content.decode()

    for name in ("workflow", "has_warnings", "feedback_origin", "model_setting", "policy"):
        assert f'name="{name}"' in html
    for value in ("unanswered_call", "orphan_result", "invalid_arguments", "malformed_artifact_id", "any"):
        assert f'value="{value}"' in html
    assert '<option value="permitted"' in html and '<option value="clean"' not in html
    assert '<option value="openwebui"' in html


def test_the_page_lists_what_the_filters_find_and_its_links_keep_them(
    client: Client, reviewer: User, source: Source
) -> None:
    for number in range(3):
        thinking(source, number, enable_thinking=True)
    thinking(source, 9, enable_thinking=False)
    query = "workflow=protocol_qa&has_warnings=any&has_warnings=orphan_result&model_setting=enable_thinking%3Dtrue"

    found: Any = signed_in(client, reviewer).get(
        "/conversations/?workflow=protocol_qa&model_setting=enable_thinking%3Dtrue"
    )
    none: Any = client.get(f"/conversations/?{query}")

    assert sorted(c.external_id for c in found.context["page"].conversations) == [f"chat-True-{n}" for n in range(3)]
    assert none.context["page"].conversations == []
    # The pager, the review queue and the feedback forms link back with every filter, repeated ones included.
    assert none.context["list_query"] == query
    assert 'value="enable_thinking=true"' in none.content.decode()


def test_a_malformed_model_setting_is_shown_next_to_its_field(client: Client, reviewer: User) -> None:
    response = signed_in(client, reviewer).get("/conversations/?model_setting=enable_thinking")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="id_model_setting_error"' in html and "expected key=value" in html
