"""The conversation API in windows of the active path: ?after=<position>&limit=, and where the next one starts."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from chats.models import Conversation, Message
from chats.selectors.threads import WINDOW_LIMIT_MAX, WINDOW_SIZE
from chats.services.feedback import feedback_submit
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(api_client: APIClient, reviewer: Any) -> APIClient:
    api_client.force_login(reviewer)
    return api_client


def detail(conversation: Conversation) -> str:
    return f"/api/v1/conversations/{conversation.uuid}/"


def test_reading_window_after_window_gives_the_whole_thread_once(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=25)
    whole = reader.get(detail(conversation)).json()
    assert "window" not in whole  # without after nor limit: the whole thread, as before windows

    keys: list[str] = []
    calls: list[str] = []
    url: str | None = f"{detail(conversation)}?limit=10"
    windows = []
    while url is not None:
        response = reader.get(url)
        assert response.status_code == 200, response.json()
        body = response.json()
        keys += [message["key"] for message in body["messages"]]
        calls += [call["call_id"] for message in body["messages"] for call in message["tool_calls"]]
        windows.append(body["window"])
        url = body["window"]["next"]
    assert keys == [message["key"] for message in whole["messages"]]
    assert calls == [call["call_id"] for message in whole["messages"] for call in message["tool_calls"]]
    assert [(w["start"], w["end"], w["next_after"]) for w in windows] == [(0, 10, 9), (10, 20, 19), (20, 25, None)]
    assert windows[0]["total"] == 25 and windows[0]["next"].endswith(f"{detail(conversation)}?after=9&limit=10")


def test_a_window_names_the_parent_of_its_first_message(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=12)
    parent = Message.objects.get(conversation=conversation, depth=4, on_active_path=True)

    body = reader.get(f"{detail(conversation)}?after=4&limit=3").json()

    assert [m["key"] for m in body["messages"]][:1] == list(
        Message.objects.filter(conversation=conversation, depth=5, on_active_path=True).values_list("key", flat=True)
    )
    assert body["messages"][0]["parent_key"] == parent.key


def test_after_alone_reads_a_window_of_the_default_size(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=WINDOW_SIZE + 30, with_tools=False)

    body = reader.get(f"{detail(conversation)}?after=9").json()

    assert len(body["messages"]) == WINDOW_SIZE and body["window"]["start"] == 10
    assert body["window"]["next_after"] == 9 + WINDOW_SIZE


def test_a_window_lists_only_the_feedback_on_its_messages_and_on_the_conversation(
    source: Any, reader: APIClient, reviewer: Any
) -> None:
    conversation = make_conversation(source, n_messages=12)
    inside, outside = (Message.objects.get(conversation=conversation, depth=d, on_active_path=True) for d in (1, 8))
    for message in (inside, outside, None):
        feedback_submit(author=reviewer, conversation=conversation, message=message, score=1)

    body = reader.get(f"{detail(conversation)}?limit=4").json()

    assert sorted(str(entry["message"]) for entry in body["feedback"]) == sorted([inside.key, "None"])


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("after=-1", "/after"),
        ("after=abc", "/after"),
        (f"after={2**63}", "/after"),
        ("limit=0", "/limit"),
        (f"limit={WINDOW_LIMIT_MAX + 1}", "/limit"),
        ("limit=1e3", "/limit"),
        ("branch=all&limit=5", "/branch"),
    ],
)
def test_a_bad_window_is_a_400_naming_the_parameter(source: Any, reader: APIClient, query: str, path: str) -> None:
    conversation = make_conversation(source, n_messages=3)

    response = reader.get(f"{detail(conversation)}?{query}")

    assert response.status_code == 400
    assert [error["path"] for error in response.json()["errors"]] == [path]


@pytest.mark.parametrize("n_messages", [8, 400])
def test_a_window_takes_the_same_queries_whatever_the_thread_size(
    source: Any, reader: APIClient, reviewer: Any, django_assert_num_queries: Any, n_messages: int
) -> None:
    conversation = make_conversation(source, n_messages=n_messages)
    feedback_submit(author=reviewer, conversation=conversation, score=1)
    reader.get(detail(conversation))  # the view recorded: the window below is read alone

    # session, user, groups, conversation; the path's length, the window's messages, the key of its first message's
    # parent; tool calls, artifacts, feedback, their labels
    with django_assert_num_queries(11):
        response = reader.get(f"{detail(conversation)}?after=2&limit=5")

    assert response.status_code == 200 and len(response.json()["messages"]) == 5
