"""Property-based: any valid conversation ingested twice equals once; no JSON input makes the endpoint fail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chats.models import Conversation, Message, ToolCall

# NUL cannot be stored in PostgreSQL and is refused (tested in tests/api/test_ingest_views.py), so valid text has none.
text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40)
part = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.builds(
        lambda u: {"type": "image_url", "image_url": u},
        st.sampled_from(["https://e.org/a.png", "data:image/png;base64,AAAA"]),
    ),
    st.builds(lambda t: {"text": t}, text),
)
content = st.one_of(text, st.none(), st.lists(part, max_size=3))
plain_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "developer"]), "content": content},
    optional={"name": text, "reasoning_content": text, "x_unknown": st.integers()},
)


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    messages = draw(st.lists(plain_message, min_size=1, max_size=6))
    if draw(st.booleans()):
        call_id = "call_" + draw(st.text("abcdef0123456789", min_size=1, max_size=8))
        arguments = draw(st.one_of(st.just('{"q": 1}'), text))
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "search", "arguments": arguments},
                    }
                ],
            }
        )
        if draw(st.booleans()):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": draw(text)})
    return {"chat_id": draw(st.text("abcdefgh", min_size=1, max_size=10)), "main_messages": messages}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "chat_id",
                    "main_messages",
                    "messages",
                    "nodes",
                    "mapping",
                    "chat_history",
                    "context",
                    "tool_calls",
                    "parent_id",
                    "current_node",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)

HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.django_db
@HYPOTHESIS
@given(document=conversations())
def test_ingesting_any_valid_conversation_twice_equals_ingesting_it_once(ingest_client, document):
    Conversation.objects.all().delete()
    first = ingest_client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")
    snapshot = list(Message.objects.order_by("id").values_list("id", "key", "role", "text", "on_active_path"))
    calls = list(ToolCall.objects.values_list("call_id", "result_message_id"))

    second = ingest_client.post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")

    assert first.status_code == 201, first.json()
    assert second.status_code == 200 and second.json()["outcome"] == "unchanged"
    assert list(Message.objects.order_by("id").values_list("id", "key", "role", "text", "on_active_path")) == snapshot
    assert list(ToolCall.objects.values_list("call_id", "result_message_id")) == calls


@pytest.mark.django_db
@HYPOTHESIS
@given(document=json_values)
def test_no_json_input_makes_the_endpoint_fail(ingest_client, document):
    for url in ("/api/v1/ingest/", "/api/v1/ingest/bulk/"):
        response = ingest_client.post(url, data=json.dumps(document), content_type="application/json")

        assert response.status_code in (200, 201, 400, 413), response.content
        body = response.json()
        if response.status_code == 400 and url.endswith("ingest/"):
            assert all({"path", "message"} <= set(error) for error in body["errors"])
