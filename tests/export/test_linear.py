"""The linear exporters (openai, chat_document, record_qa, chat_history) on hand-built conversations."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from chats.export import active_path, export_conversation
from chats.formats.canonical import Feedback, Message
from chats.ingest import parse_document
from tests.factories.export_documents import CHAT_DOCUMENT, CHAT_GRAPH, CHATGPT_EXPORT
from tests.factories.exports import branched_conversation, injection_conversation, text_message, tool_conversation


def test_openai_export_writes_tool_calls_tool_results_and_reasoning_in_openai_style() -> None:
    result = export_conversation(tool_conversation(format="chat_graph"), "openai")

    assert result.document == [
        {"role": "system", "content": "Be precise."},
        {"role": "user", "content": "Why are there nonspecific PCR bands?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_abc123",
                    "type": "function",
                    "function": {"name": "airalogy_search", "arguments": '{"keywords":["PCR"]}'},
                }
            ],
            "reasoning_content": "I should search first.",
        },
        {"role": "tool", "content": '{"search_result":"primer dimers"}', "tool_call_id": "call_abc123"},
        {"role": "assistant", "content": "Possibly primer dimers."},
    ]


def test_an_empty_string_content_exports_as_an_empty_string_and_null_as_null() -> None:
    conversation = tool_conversation(format="chat_graph")
    conversation.messages[2].parts = [{"type": "text", "text": ""}]
    empty = export_conversation(conversation, "openai").document[2]
    conversation.messages[2].parts = []
    conversation.messages[2].content_is_null = True
    null = export_conversation(conversation, "openai").document[2]

    assert empty["content"] == ""
    assert null["content"] is None


def test_multimodal_content_exports_as_a_list_of_openai_parts() -> None:
    conversation = tool_conversation(format="chat_graph")
    conversation.messages[1].content_is_string = False
    conversation.messages[1].parts = [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image", "url": "https://example.com/gel.png", "detail": "high"},
        {"type": "audio", "data": "UklGRg==", "format": "wav"},
        {"type": "file", "file_id": "file-1", "filename": "gel.pdf"},
        {"type": "unknown", "raw": {"image": "https://example.com/raw.png"}},
    ]

    content = export_conversation(conversation, "openai").document[1]["content"]

    assert content == [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/gel.png", "detail": "high"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-1", "filename": "gel.pdf"}},
        {"image": "https://example.com/raw.png"},
    ]


def test_legacy_function_calls_export_as_function_call_and_custom_calls_keep_their_input() -> None:
    conversation = tool_conversation(format="chat_graph")
    assistant = conversation.messages[2]
    assistant.tool_calls[0].type = "function_call"
    assistant.tool_calls[0].call_id = "function_call:m3"
    answer = conversation.messages[3]
    answer.role, answer.name, answer.tool_call_id = "function", "airalogy_search", "function_call:m3"
    legacy = export_conversation(conversation, "openai").document

    assistant.tool_calls[0].type = "custom"
    custom = export_conversation(conversation, "openai").document

    assert legacy[2]["function_call"] == {"name": "airalogy_search", "arguments": '{"keywords":["PCR"]}'}
    assert "tool_calls" not in legacy[2]
    # The legacy answer is matched by name, so its synthetic call id stays out of the document.
    assert legacy[3] == {
        "role": "function",
        "name": "airalogy_search",
        "content": '{"search_result":"primer dimers"}',
    }
    assert custom[2]["tool_calls"][0]["custom"] == {
        "name": "airalogy_search",
        "input": '{"keywords":["PCR"]}',
    }


def test_linear_exports_follow_the_active_path_and_say_how_many_branches_they_drop() -> None:
    conversation = branched_conversation()

    for format in ("openai", "chat_document", "record_qa", "chat_history"):
        result = export_conversation(conversation, format)
        messages = {
            "openai": lambda d: d,
            "chat_document": lambda d: d["main_messages"],
            "record_qa": lambda d: d["main_messages"],
            "chat_history": lambda d: d["chat_history"],
        }[format](result.document)
        assert [m["content"] for m in messages] == [
            "How do I implement a neural network?",
            "Use PyTorch.",
            "Show me an example.",
        ], format
        assert "1 branch (1 message) not on the active path" in result.omitted, format


def test_an_active_leaf_inside_the_tree_exports_the_path_up_to_it() -> None:
    conversation = branched_conversation()
    conversation.active_leaf_key = "m2a"

    result = export_conversation(conversation, "openai")

    assert [m["content"] for m in result.document] == [
        "How do I implement a neural network?",
        "Use TensorFlow.",
    ]
    assert "1 branch (2 messages) not on the active path" in result.omitted


def test_a_stale_active_leaf_key_falls_back_to_the_last_message() -> None:
    conversation = branched_conversation()
    conversation.active_leaf_key = "gone"

    result = export_conversation(conversation, "openai")

    assert result.document[-1]["content"] == "Show me an example."


def test_a_single_chain_exports_with_nothing_omitted_in_a_format_that_holds_everything_it_has() -> None:
    conversation = tool_conversation(format="openai")
    conversation.external_id = None
    conversation.title = conversation.user_id = conversation.model_name = ""
    conversation.model = conversation.started_at = None

    assert export_conversation(conversation, "openai").omitted == []


def test_openai_export_lists_the_conversation_fields_it_cannot_hold() -> None:
    conversation = tool_conversation(format="chat_document")
    conversation.metadata = {"active": True}

    omitted = export_conversation(conversation, "openai").omitted

    assert omitted == [
        "conversation id",
        "title",
        "user id",
        "model",
        "start/end time",
        "top-level keys: active",
    ]


def test_chat_document_carries_the_conversation_fields_and_its_other_top_level_keys() -> None:
    conversation = tool_conversation(format="openai")
    conversation.scenario = {"workflow": "pcr_troubleshooting"}
    conversation.metadata = {"active": True, "deleted": False}

    document = export_conversation(conversation, "chat_document").document

    assert {key: value for key, value in document.items() if key not in ("main_messages", "human_feedback")} == {
        "chat_id": "airalogy.id.chat.0001",
        "user_id": "u-1",
        "title": "PCR bands",
        "start_time": "2025-03-01T08:00:00+00:00",
        "model": {"name": "qwen3.5-flash", "enable_thinking": True},
        "scenario": {"workflow": "pcr_troubleshooting"},
        "active": True,
        "deleted": False,
    }
    assert len(document["main_messages"]) == 5
    # A Masterbrain document has one feedback entry per main message, given or not.
    assert document["human_feedback"] == [{"score": 0, "additional": ""}] * 5


def test_chat_document_puts_scenario_messages_apart_from_the_main_ones() -> None:
    conversation = tool_conversation(format="openai")
    conversation.messages[0].section = "scenario"

    document = export_conversation(conversation, "chat_document").document

    assert document["scenario_messages"] == [{"role": "system", "content": "Be precise."}]
    assert [m["role"] for m in document["main_messages"]] == ["user", "assistant", "tool", "assistant"]


def test_chat_document_aligns_human_feedback_with_the_main_messages() -> None:
    result = export_conversation(injection_conversation(), "chat_document")

    assert result.document["human_feedback"] == [
        {"score": 0, "additional": ""},
        {"score": 0, "additional": ""},
        {"score": 0, "additional": ""},
        {"score": 1, "additional": "clear"},
    ]
    assert "injection context" not in result.omitted  # the conversation has none to lose


def test_chat_document_turns_thumbs_into_scores_and_prefers_masterbrain_feedback() -> None:
    conversation = injection_conversation()
    conversation.feedback[0].raw = None
    conversation.feedback.insert(0, Feedback(origin="chatgpt", message_key="answer", score=-1))
    conversation.feedback.append(Feedback(origin="chatgpt", message_key="q", score=-1, comment="vague"))

    human_feedback = export_conversation(conversation, "chat_document").document["human_feedback"]

    assert human_feedback[0] == {"score": -1, "additional": "vague"}
    assert human_feedback[3] == {"score": 1, "additional": "clear"}


def test_conversation_level_feedback_is_reported_as_omitted_by_chat_document() -> None:
    conversation = injection_conversation()
    conversation.feedback.append(Feedback(origin="masterbrain", message_key=None, score=1))

    assert "conversation-level feedback (1)" in export_conversation(conversation, "chat_document").omitted


def test_formats_without_feedback_say_they_drop_it() -> None:
    for format in ("openai", "chat_history", "chat_graph", "chatgpt_export"):
        assert "feedback (1)" in export_conversation(injection_conversation(), format).omitted, format


def test_record_qa_keeps_its_injection_context_as_received() -> None:
    conversation = injection_conversation()
    conversation.injection_context = {"inject_airalogy_records": {"enabled": False, "airalogy_record_ids": []}}

    document = export_conversation(conversation, "record_qa").document

    assert document["context"] == conversation.injection_context


def test_record_qa_derives_its_context_from_the_injected_artifacts_when_none_came_in() -> None:
    document = export_conversation(injection_conversation(), "record_qa").document

    assert document["context"] == {
        "inject_airalogy_protocols": {
            "enabled": True,
            "airalogy_protocol_ids": ["airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1"],
        },
        "inject_airalogy_records": {"enabled": False, "airalogy_record_ids": []},
        "inject_airalogy_discussions": {"enabled": False, "airalogy_discussion_ids": []},
    }
    assert "chat_id" not in document


def test_chat_history_keeps_message_and_conversation_context_pairs() -> None:
    conversation = branched_conversation(format="openai")
    conversation.messages[0].context_pairs = [["page", "/protocols/42"]]
    conversation.context_pairs = [["app", "lab"]]

    result = export_conversation(conversation, "chat_history")

    assert result.document["conversation_id"] == "123456"
    assert result.document["context"] == [["app", "lab"]]
    assert result.document["chat_history"][0] == {
        "role": "user",
        "content": "How do I implement a neural network?",
        "context": [["page", "/protocols/42"]],
    }
    assert "message context pairs" not in result.omitted


def test_metadata_keys_of_another_format_never_make_the_export_look_like_a_third_format() -> None:
    conversation = tool_conversation(format="chatgpt_export")
    conversation.metadata = {"messages": ["x"], "safe_urls": []}

    result = export_conversation(conversation, "chat_document")

    assert "messages" not in result.document
    assert result.document["safe_urls"] == []
    assert "top-level keys that clash with the format: messages" in result.omitted


def test_messages_received_in_an_openai_style_format_go_out_exactly_as_received() -> None:
    raw = {"role": "user", "content": "hi", "files": [{"id": "f1"}], "message_id": "7"}
    conversation = tool_conversation(format="openai")
    conversation.messages = [Message(key="k", role="user", parts=[{"type": "text", "text": "hi"}], raw=raw)]

    for format in ("openai", "chat_document", "record_qa"):
        result = export_conversation(conversation, format)
        messages = result.document if format == "openai" else result.document["main_messages"]
        assert messages == [raw], format


def test_unknown_keys_of_a_message_survive_a_rebuilt_export() -> None:
    message = text_message("k", "user", "hi", None, extra={"channel": "final", "role": "ignored"})
    conversation = tool_conversation(format="chat_graph")
    conversation.messages = [message]

    assert export_conversation(conversation, "openai").document == [
        {"role": "user", "content": "hi", "channel": "final"}
    ]


def test_an_unknown_format_is_refused_with_the_known_ones_named() -> None:
    with pytest.raises(ValueError, match="chatgpt_export"):
        export_conversation(tool_conversation(), "yaml")


def test_a_refusal_beside_string_or_null_content_goes_back_to_the_refusal_key() -> None:
    conversation = tool_conversation(format="chat_graph")
    answer = conversation.messages[4]
    answer.parts = [{"type": "refusal", "refusal": "I can't help with that."}]
    answer.content_is_null, answer.content_is_string = True, False

    assert export_conversation(conversation, "openai").document[4] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }


# --- times as the input wrote them ---


def masterbrain_document(**fields: Any) -> dict[str, Any]:
    return {**copy.deepcopy(CHAT_DOCUMENT), **fields}


@pytest.mark.parametrize("format", ["chat_document", "record_qa"])
def test_start_and_end_time_go_back_as_written_when_they_name_the_stored_instant(format: str) -> None:
    document = masterbrain_document(start_time="2025-03-01T16:00:00+08:00", end_time="2025-03-01T08:05:30.250")
    conversation = parse_document(document, format="chat_document")

    exported = export_conversation(conversation, format).document

    assert (exported["start_time"], exported["end_time"]) == ("2025-03-01T16:00:00+08:00", "2025-03-01T08:05:30.250")


def test_a_time_whose_instant_changed_goes_out_as_the_stored_utc_instant() -> None:
    conversation = tool_conversation(format="chat_document")  # started 2025-03-01 08:00 UTC
    conversation.ended_at = datetime(2025, 3, 1, 8, 30, tzinfo=UTC)
    conversation.original_times = {"start_time": "2025-03-01T16:00:00+08:00", "end_time": "2025-03-01T16:05:00+08:00"}

    exported = export_conversation(conversation, "chat_document").document

    assert exported["start_time"] == "2025-03-01T16:00:00+08:00"  # the same instant: as written
    assert exported["end_time"] == "2025-03-01T08:30:00+00:00"  # another instant (a later document moved it)


def test_times_as_written_under_another_formats_keys_are_not_used() -> None:
    conversation = tool_conversation(format="chatgpt_export")
    conversation.original_times = {"create_time": 1740816000}

    assert export_conversation(conversation, "chat_document").document["start_time"] == "2025-03-01T08:00:00+00:00"


def main_messages(document: Any, format: str) -> list[Any]:
    """The exported messages but the scenario's system message (which the linear formats place differently)."""
    if format == "openai":
        messages = document
    elif format == "chat_history":
        messages = document["chat_history"]
    else:
        messages = document["main_messages"]
    return [message for message in messages if message["role"] != "system"]


def test_per_message_times_of_a_chat_document_survive_every_linear_export() -> None:
    document = masterbrain_document()
    for index, message in enumerate(document["main_messages"]):
        message["timestamp"] = f"2025-03-01T16:0{index}:00+08:00"
    conversation = parse_document(document)
    rebuilt = parse_document(document)
    for message in rebuilt.messages:
        message.raw = None  # as if the messages had to be rebuilt from their canonical fields

    for source in (conversation, rebuilt):
        for format in ("openai", "chat_document", "record_qa", "chat_history"):
            exported = export_conversation(source, format).document
            times = [message.get("timestamp") for message in main_messages(exported, format)]
            assert times == [f"2025-03-01T16:0{index}:00+08:00" for index in range(4)], format


# --- what a linear format cannot hold of a tree format's messages ---


def test_linear_exports_name_the_author_metadata_and_node_ids_they_drop() -> None:
    conversation = parse_document(CHAT_GRAPH)  # active path: node-1, node-3; node-2 has author metadata
    conversation.messages[2].author_metadata = {"client": "web"}

    for format in ("openai", "chat_document", "record_qa", "chat_history"):
        omitted = export_conversation(conversation, format).omitted
        assert "author metadata of 1 message" in omitted, format
        assert "message ids of 2 messages (node ids)" in omitted, format
    tree = export_conversation(conversation, "chatgpt_export").omitted
    assert not any(note.startswith(("author metadata", "message ids")) for note in tree)


def test_linear_exports_name_the_mapping_ids_of_a_chatgpt_export() -> None:
    conversation = parse_document(CHATGPT_EXPORT)
    path = active_path(conversation)

    omitted = export_conversation(conversation, "openai").omitted

    assert f"message ids of {len(path)} messages (mapping ids)" in omitted
    assert not any(note.startswith("author metadata") for note in omitted)  # every author's metadata is empty


def test_messages_without_ids_or_author_metadata_add_no_note() -> None:
    omitted = export_conversation(tool_conversation(format="chat_graph"), "openai").omitted

    assert not any(note.startswith(("author metadata", "message ids")) for note in omitted)
