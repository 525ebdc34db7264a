"""Data builders shared by the tests. Everything goes in through conversation_ingest, as in production."""

from __future__ import annotations

import json
import uuid
from copy import deepcopy
from typing import Any

from chats.models import Conversation, Label, Message, Source
from chats.services.ingestion import conversation_ingest
from tests.factories.documents import load_fixture

PROTOCOL_ID = "airalogy.id.lab.zhang_lab.project.pcr_opt.protocol.touchdown_pcr.v.0.2.1"
RECORD_ID = "airalogy.id.record.6f1c2a4e-4b7d-4f43-9a63-2f3c1d9e8b10.v.1"


def ingest(source: Source, document: Any, format: str | None = None) -> Conversation:
    result = conversation_ingest(source=source, document=document, format=format)
    assert result.conversation is not None, result.errors
    return result.conversation


def _tool_turn(number: int, topic: str) -> list[dict[str, Any]]:
    call_id = f"call_{number:04d}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "airalogy_search", "arguments": json.dumps({"keywords": [topic]})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"search_result": [{"title": topic}]})},
    ]


def make_messages(n_messages: int, *, with_tools: bool = True, topic: str = "PCR") -> list[dict[str, Any]]:
    """An OpenAI-style history of exactly ``n_messages`` messages: a system prompt, then user/assistant turns,
    with a tool call and its result in every turn when ``with_tools``."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful lab assistant."}]
    turn = 0
    while len(messages) < n_messages:
        turn += 1
        messages.append({"role": "user", "content": f"Question {turn} about {topic}: why do bands appear?"})
        if with_tools and len(messages) + 3 <= n_messages:
            messages.extend(_tool_turn(turn, topic))
        messages.append({"role": "assistant", "content": f"Answer {turn}: check the **annealing temperature**."})
    return messages[:n_messages]


def make_conversation(
    source: Source,
    *,
    n_messages: int = 6,
    with_tools: bool = True,
    branches: int = 0,
    chat_id: str | None = None,
    title: str = "",
    topic: str = "PCR",
    model: str = "qwen3.5-flash",
    user_id: str = "airalogy.id.user.7",
    start_time: str | None = None,
) -> Conversation:
    """A chat_document conversation with ``n_messages`` messages on its first branch; each extra branch is a
    resend of the history with a different last answer (so it branches at the last message)."""
    chat_id = chat_id or f"airalogy.id.chat.{uuid.uuid4()}"
    messages = make_messages(n_messages, with_tools=with_tools, topic=topic)
    document: dict[str, Any] = {
        "chat_id": chat_id,
        "user_id": user_id,
        "model": model,
        "main_messages": messages,
    }
    if title:
        document["title"] = title
    if start_time:
        document["start_time"] = start_time
    conversation = ingest(source, document, format="chat_document")
    for number in range(branches):
        variant = deepcopy(document)
        variant["main_messages"][-1] = {"role": "assistant", "content": f"Alternative answer {number + 1}."}
        conversation = ingest(source, variant, format="chat_document")
    conversation.refresh_from_db()
    return conversation


def make_record_qa(source: Source) -> Conversation:
    """The Record QA fixture: protocol and record injections."""
    return ingest(source, load_fixture("record_qa/multi_turn_injections.json"), format="record_qa")


def make_chatgpt_branches(source: Source) -> Conversation:
    """The ChatGPT export fixture with branches and tools."""
    return ingest(source, load_fixture("chatgpt_export/colony_pcr_branches_and_tools.json"), format="chatgpt_export")


def make_labels(*names: str) -> list[Label]:
    return [Label.objects.get_or_create(name=name)[0] for name in names or ("helpful", "hallucination")]


def last_assistant(conversation: Conversation) -> Message:
    message = (
        Message.objects.filter(conversation=conversation, role="assistant", on_active_path=True)
        .order_by("-depth")
        .first()
    )
    assert message is not None
    return message


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)><svg onload=alert(2)><script>alert(3)</script></svg>'
HOSTILE_LINK = '[click](javascript:alert(4)) <a href="javascript:alert(5)">a</a>'


def make_hostile_conversation(source: Source) -> Conversation:
    """Script in every place a thread shows: text, names, tool names and arguments, results, artifact payloads."""
    protocol_id = PROTOCOL_ID
    hostile_markdown = (
        f"# Protocol {HOSTILE}\n\n{HOSTILE_LINK}\n\n![x](javascript:alert(6))\n\n<iframe src=javascript:alert(7)>"
    )
    messages = [
        {"role": "system", "content": f"System {HOSTILE}", "name": f"sys{HOSTILE}"},
        {
            "role": "user",
            "name": "<img src=x onerror=alert(8)>",
            "content": [
                {"type": "text", "text": f"User {HOSTILE} {HOSTILE_LINK}"},
                {"type": "image_url", "image_url": {"url": "javascript:alert(9)"}},
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMTApIj48c2NyaXB0PmFsZXJ0KDExKTwvc2NyaXB0Pjwvc3ZnPg=="
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": f"Thinking <think>{HOSTILE}</think>",
            "tool_calls": [
                {
                    "id": "call_x1",
                    "type": "function",
                    "function": {"name": "evil<script>alert(12)</script>", "arguments": json.dumps({"q": HOSTILE})},
                },
                {
                    "id": "call_x2",
                    "type": "function",
                    "function": {
                        "name": "inject_airalogy_protocols",
                        "arguments": json.dumps({"airalogy_protocol_ids": [protocol_id, f"bad{HOSTILE}"]}),
                    },
                },
                {
                    "id": "call_x3",
                    "type": "function",
                    "function": {"name": "broken", "arguments": f"{{not json {HOSTILE}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_x1", "content": f"Result {HOSTILE} {HOSTILE_LINK}"},
        {
            "role": "tool",
            "tool_call_id": "call_x2",
            "content": json.dumps(
                {
                    "airalogy_protocols": [
                        {"airalogy_protocol_id": protocol_id, "markdown": hostile_markdown, "title": HOSTILE},
                        {"airalogy_protocol_id": f"bad{HOSTILE}", "markdown": hostile_markdown},
                    ]
                }
            ),
        },
        {"role": "tool", "tool_call_id": "call_orphan", "content": json.dumps({"html": HOSTILE})},
        {
            "role": "assistant",
            "content": f"Answer {HOSTILE}\n\n{HOSTILE_LINK}\n\n<svg><script>alert(13)</script></svg>",
        },
    ]
    document = {
        "chat_id": f"hostile-{uuid.uuid4()}",
        "title": f"Hostile {HOSTILE}",
        "user_id": "<script>alert(14)</script>",
        "model": "<img src=x onerror=alert(15)>",
        "main_messages": messages,
        "scenario": {"x": HOSTILE},
    }
    return ingest(source, document, format="chat_document")
