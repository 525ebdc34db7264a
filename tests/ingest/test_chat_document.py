from datetime import UTC, datetime

import pytest

from chats.formats.canonical import FEEDBACK_ORIGIN_MASTERBRAIN, ParseError
from chats.ingest import chat_document, parse_document
from tests.factories.documents import load_fixture


@pytest.fixture(scope="module")
def document():
    return load_fixture("chat_document/masterbrain_chat_document.json")


@pytest.fixture(scope="module")
def conversation(document):
    return parse_document(document)


def test_masterbrain_document_maps_its_fields(conversation):
    assert conversation.format == "chat_document"
    assert conversation.external_id == "airalogy.id.chat.5b1f7c3e-2d4a-4e8b-9c61-0f3a7d2e9b14"
    assert conversation.user_id == "airalogy.id.user.8c2e4f1a-9b3d-4e7c-a5f6-1d2e3f4a5b6c"
    assert conversation.title == "qPCR efficiency below 90%"
    assert conversation.started_at == datetime(2024, 5, 6, 1, 12, 3, tzinfo=UTC)
    assert conversation.ended_at == datetime(2024, 5, 6, 1, 31, 47, tzinfo=UTC)
    assert conversation.warnings == []


def test_model_object_gives_the_name_and_keeps_the_settings(conversation, document):
    assert conversation.model_name == "qwen3.5-flash"
    assert conversation.model == {"name": "qwen3.5-flash", "enable_thinking": True, "temperature": 0.3}


def test_scenario_is_kept_as_given(conversation, document):
    assert conversation.scenario == document["scenario"]


def test_unmapped_top_level_keys_go_to_metadata_verbatim(conversation):
    assert conversation.metadata == {
        "active": True,
        "deleted": False,
        "system_message_name": "masterbrain_research_assistant_v3",
        "function_names": ["airalogy_search", "inject_airalogy_protocols"],
        "client_version": "masterbrain-web 2.14.0",
    }


def test_scenario_messages_come_first_in_the_chain(conversation):
    sections = [message.section for message in conversation.messages]
    assert sections == ["scenario"] * 3 + ["main"] * 6
    assert conversation.messages[0].parent_key is None
    assert conversation.messages[3].parent_key == conversation.messages[2].key
    assert conversation.messages[0].source_path == "/scenario_messages/0"
    assert conversation.messages[3].source_path == "/main_messages/0"


def test_tool_call_and_inline_reasoning_in_main_messages(conversation):
    caller, result, answer = conversation.messages[4:7]
    assert caller.tool_calls[0].name == "airalogy_search"
    assert result.tool_call_id == "call_9f2c1a"
    assert answer.reasoning.startswith("E = 10^(1/3.9) - 1")
    assert answer.text.startswith("With a slope of -3.9")


def test_human_feedback_is_aligned_with_main_messages_and_score_zero_is_skipped(conversation):
    main = [message for message in conversation.messages if message.section == "main"]
    assert [(feedback.message_key, feedback.score, feedback.comment) for feedback in conversation.feedback] == [
        (main[3].key, 1, "Clear explanation of the standard-curve slope."),
        (main[4].key, None, "Would like a literature reference here."),
        (main[5].key, -1, "The spike-in threshold should be 1 cycle for our lab SOP."),
    ]
    assert {feedback.origin for feedback in conversation.feedback} == {FEEDBACK_ORIGIN_MASTERBRAIN}
    assert conversation.feedback[0].raw == {"score": 1, "additional": "Clear explanation of the standard-curve slope."}


def test_history_variant_with_a_string_model_and_naive_time():
    conversation = parse_document(load_fixture("chat_document/history_variant.json"))
    assert conversation.format == "chat_document"
    assert conversation.external_id == "airalogy.id.chat.a3c9e1f7-5d2b-4f8a-b6c4-7e1d9f3a2b58"
    assert conversation.user_id == "u-2291"
    assert conversation.model_name == "gpt-4o-mini"
    assert conversation.model == "gpt-4o-mini"
    assert conversation.scenario == "cell_culture_troubleshooting"
    assert conversation.started_at == datetime(2024, 5, 7, 14, 0, tzinfo=UTC)
    assert conversation.ended_at == datetime(2024, 5, 7, 14, 5, tzinfo=UTC)
    assert [message.source_path for message in conversation.messages][:2] == ["/history/0", "/history/1"]
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/start_time", "timestamp '2024-05-07T14:00:00' has no UTC offset; read as UTC")
    ]
    assert conversation.metadata == {}


def test_messages_variant_with_numeric_ids_and_numeric_string_time():
    conversation = parse_document(load_fixture("chat_document/messages_variant.json"))
    assert conversation.external_id == "100234"
    assert conversation.user_id == "5521"
    assert conversation.model_name == "deepseek-r1"
    assert conversation.started_at == datetime(2024, 5, 8, 10, 10, 0, 500000, tzinfo=UTC)
    assert conversation.ended_at == datetime(2024, 5, 8, 10, 45, 12, tzinfo=UTC)
    assert conversation.scenario is None
    assert conversation.metadata == {"tags": ["western_blot", "antibody"]}
    assert conversation.messages[1].reasoning.startswith("The smear above 100 kDa")
    assert conversation.messages[1].text.startswith("The high-molecular-weight smear")


def minimal(**fields):
    return {
        "chat_id": "c1",
        "main_messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        **fields,
    }


def test_feedback_length_mismatch_is_a_warning_and_aligns_from_the_start():
    conversation = chat_document.parse(minimal(human_feedback=[{"score": -1, "additional": ""}]))
    assert [(feedback.message_key, feedback.score) for feedback in conversation.feedback] == [
        (conversation.messages[0].key, -1)
    ]
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/human_feedback", "human_feedback has 1 entries for 2 main messages; aligned from the first message")
    ]


def test_feedback_with_an_invalid_score_is_ignored_with_a_warning():
    conversation = chat_document.parse(minimal(human_feedback=[{"score": 5}, None]))
    assert conversation.feedback == []
    assert [warning.path for warning in conversation.warnings] == ["/human_feedback/0/score"]


def test_feedback_that_is_not_a_list_stays_in_metadata():
    conversation = chat_document.parse(minimal(human_feedback={"score": 1}))
    assert conversation.feedback == []
    assert conversation.metadata == {"human_feedback": {"score": 1}}
    assert [warning.path for warning in conversation.warnings] == ["/human_feedback"]


def test_a_model_of_another_type_stays_in_metadata():
    conversation = chat_document.parse(minimal(model=["gpt-4o"]))
    assert conversation.model_name == ""
    assert conversation.metadata == {"model": ["gpt-4o"]}
    assert [warning.path for warning in conversation.warnings] == ["/model"]


def test_a_chat_document_without_messages_is_rejected():
    with pytest.raises(ParseError) as caught:
        chat_document.parse({"chat_id": "c1", "history": []})
    assert [error.as_dict() for error in caught.value.errors] == [
        {"path": "/history", "message": "the conversation has no messages"}
    ]


def test_start_and_end_time_are_kept_as_written_beside_their_utc_instant():
    conversation = chat_document.parse(minimal(start_time="2025-03-01T10:00:00+08:00", end_time="2025-03-01T02:30:00"))
    assert conversation.started_at == datetime(2025, 3, 1, 2, 0, tzinfo=UTC)
    assert conversation.ended_at == datetime(2025, 3, 1, 2, 30, tzinfo=UTC)
    assert conversation.original_times == {"start_time": "2025-03-01T10:00:00+08:00", "end_time": "2025-03-01T02:30:00"}


def test_a_record_qa_document_keeps_its_times_as_written_and_absent_times_are_not_invented():
    record_qa = parse_document(minimal(context={}, start_time=1740794400.25), format="record_qa")
    assert record_qa.original_times == {"start_time": 1740794400.25}
    assert chat_document.parse(minimal(end_time=None)).original_times == {}
