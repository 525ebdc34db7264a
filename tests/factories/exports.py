"""Small hand-built conversations, so exporters are tested without any parser."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chats.formats.canonical import Artifact, Conversation, Feedback, Message, ToolCall


def text_message(key: str, role: str, text: str, parent: str | None, **fields: Any) -> Message:
    return Message(
        key=key,
        role=role,
        parent_key=parent,
        parts=[{"type": "text", "text": text}],
        text=text,
        **fields,
    )


def call(call_id: str, name: str, arguments: str) -> ToolCall:
    return ToolCall(call_id=call_id, type="function", name=name, arguments=arguments)


def tool_conversation(format: str = "openai") -> Conversation:
    """UATA: a user question, an assistant tool call with reasoning, the tool result, the final answer."""
    return Conversation(
        format=format,
        external_id="airalogy.id.chat.0001",
        title="PCR bands",
        user_id="u-1",
        model_name="qwen3.5-flash",
        model={"name": "qwen3.5-flash", "enable_thinking": True},
        started_at=datetime(2025, 3, 1, 8, 0, tzinfo=UTC),
        messages=[
            text_message("m1", "system", "Be precise.", None),
            text_message("m2", "user", "Why are there nonspecific PCR bands?", "m1"),
            Message(
                key="m3",
                role="assistant",
                parent_key="m2",
                reasoning="I should search first.",
                tool_calls=[call("call_abc123", "airalogy_search", '{"keywords":["PCR"]}')],
            ),
            text_message("m4", "tool", '{"search_result":"primer dimers"}', "m3", tool_call_id="call_abc123"),
            text_message("m5", "assistant", "Possibly primer dimers.", "m4"),
        ],
    )


def branched_conversation(format: str = "chat_graph") -> Conversation:
    """A user question answered twice (a regeneration); the second answer has a follow-up and is active.

    Tree: m1 -> m2a, m1 -> m2b -> m3. Active leaf m3.
    """
    t0 = datetime(2021, 7, 2, 9, 0, tzinfo=UTC)
    return Conversation(
        format=format,
        external_id="123456",
        messages=[
            text_message("m1", "user", "How do I implement a neural network?", None, created_at=t0),
            text_message("m2a", "assistant", "Use TensorFlow.", "m1", created_at=t0.replace(minute=1)),
            text_message("m2b", "assistant", "Use PyTorch.", "m1", created_at=t0.replace(minute=2)),
            text_message("m3", "user", "Show me an example.", "m2b", created_at=t0.replace(minute=3)),
        ],
        active_leaf_key="m3",
    )


def injection_conversation() -> Conversation:
    """A Record QA conversation with one protocol injected, and Masterbrain feedback on the answer."""
    protocol_id = "airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1"
    conversation = Conversation(
        format="record_qa",
        messages=[
            text_message("q", "user", "Explain this protocol.", None),
            Message(
                key="inject",
                role="assistant",
                parent_key="q",
                tool_calls=[
                    call(
                        "call_inj",
                        "inject_airalogy_protocols",
                        '{"airalogy_protocol_ids":["' + protocol_id + '"]}',
                    )
                ],
            ),
            text_message(
                "result",
                "tool",
                '{"airalogy_protocols":[{"airalogy_protocol_id":"' + protocol_id + '"}]}',
                "inject",
                tool_call_id="call_inj",
            ),
            text_message("answer", "assistant", "This protocol amplifies DNA.", "result"),
        ],
    )
    conversation.artifacts.append(
        Artifact(
            kind="protocol",
            artifact_id=protocol_id,
            id_well_formed=True,
            tool_call_id="call_inj",
            message_key="inject",
            tool_name="inject_airalogy_protocols",
            requested=True,
            resolved=True,
            payload={"airalogy_protocol_id": protocol_id},
        )
    )
    conversation.feedback.append(
        Feedback(
            origin="masterbrain",
            message_key="answer",
            score=1,
            comment="clear",
            raw={"score": 1, "additional": "clear"},
        )
    )
    return conversation
