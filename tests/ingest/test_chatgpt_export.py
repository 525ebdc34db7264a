from datetime import UTC, datetime
from typing import Any

import pytest

from chats.formats.canonical import FEEDBACK_ORIGIN_CHATGPT
from chats.ingest import chatgpt_export, parse_document
from tests.factories.documents import load_fixture

# Node ids of chats/demo/documents/chatgpt_export/colony_pcr_branches_and_tools.json
SYSTEM = "eaaf5674-dd61-5f42-998a-10829e13c472"
USER_CONTEXT = "3a667d36-9e02-5c68-87e3-2a5190b7e0a2"
GEL_QUESTION = "dc77fd48-d036-5341-9998-32412271de7e"
FIRST_ANSWER = "0e6e6574-cf68-5d33-bc5b-76044accf9b3"
THOUGHTS = "83eefc9a-0422-5fa6-84ba-ab42fce5bbd9"
RECAP = "c122e5fe-7fc0-5bd2-8328-1b5c20a84508"
REGENERATED_ANSWER = "dff659dc-072a-55a9-ae91-1a17bbec9b63"
EDITED_QUESTION = "47dc85fc-504a-57a8-9aa2-7a5a8bb106bb"
QUANTIFY_QUESTION = "0f83cc33-0a16-5c2f-ac7e-9a5743d40e43"
PYTHON_CALL = "400ff286-c145-50ef-8e05-6270d30c3b76"
PYTHON_OUTPUT = "cc39d817-c5f2-55da-80b4-c97131778623"
QUANTIFIED_ANSWER = "b10d1180-052d-5e29-81c2-c5228fdf3711"
BROWSER_CALL = "28ed34c7-e15d-5888-b0cd-f5099d01a7ae"
BROWSING_DISPLAY = "342c0329-9a17-5c14-8afd-70883b2e5698"
QUOTE = "d2e7099a-e493-5afd-9be7-76578ca396ce"
PLOT_CALL = "739e6099-8e22-52b1-9966-5f27c131abfe"
PLOT_ERROR = "8f4eed49-4a58-5ac3-acd2-6bd4fcadd6c9"
LAST_ANSWER = "7ec408cb-1c03-581e-850b-fc2ff214df39"
PCR_CONVERSATION = "6640f1e2-9a7b-8000-b3c1-2f4d6e8a0b1c"


@pytest.fixture(scope="module")
def document():
    return load_fixture("chatgpt_export/colony_pcr_branches_and_tools.json")


@pytest.fixture(scope="module")
def conversation(document):
    return parse_document(document)


@pytest.fixture(scope="module")
def by_key(conversation):
    return {message.key: message for message in conversation.messages}


def test_conversation_fields(conversation):
    assert conversation.format == "chatgpt_export"
    assert conversation.external_id == PCR_CONVERSATION
    assert conversation.title == "Colony PCR gel and Q5 annealing"
    assert conversation.started_at == datetime(2024, 5, 13, 6, 0, tzinfo=UTC)
    assert conversation.ended_at == datetime(2024, 5, 13, 6, 7, 45, 800000, tzinfo=UTC)
    assert conversation.model_name == "gpt-4o"
    assert conversation.active_leaf_key == LAST_ANSWER
    assert conversation.warnings == []


def test_create_and_update_time_are_kept_as_written(conversation, document):
    assert conversation.original_times == {
        "create_time": document["create_time"],
        "update_time": document["update_time"],
    }
    assert type(conversation.original_times["update_time"]) is type(document["update_time"])


def test_unmapped_top_level_keys_go_to_metadata(conversation):
    assert set(conversation.metadata) == {
        "moderation_results", "plugin_ids", "conversation_template_id", "gizmo_id", "gizmo_type", "is_archived",
        "is_starred", "safe_urls", "blocked_urls", "conversation_origin", "voice", "async_status",
        "disabled_tool_ids", "memory_scope",
    }  # fmt: skip


def test_the_root_without_a_message_is_skipped_and_its_child_becomes_a_root(conversation, by_key):
    assert "client-created-root" not in by_key
    assert conversation.messages[0].key == SYSTEM
    assert by_key[SYSTEM].parent_key is None


def test_parents_come_before_children(conversation):
    seen = set()
    for message in conversation.messages:
        assert message.parent_key is None or message.parent_key in seen
        seen.add(message.key)
    assert len(conversation.messages) == 22


def test_regeneration_and_edit_branches_keep_their_structure(by_key):
    assert by_key[FIRST_ANSWER].parent_key == by_key[THOUGHTS].parent_key == GEL_QUESTION
    assert by_key[RECAP].parent_key == THOUGHTS
    assert by_key[EDITED_QUESTION].parent_key == by_key[QUANTIFY_QUESTION].parent_key == REGENERATED_ANSWER


def test_hidden_messages_by_weight_or_metadata(by_key):
    assert by_key[SYSTEM].hidden  # weight 0
    assert by_key[USER_CONTEXT].hidden  # is_visually_hidden_from_conversation
    assert not by_key[GEL_QUESTION].hidden


def test_multimodal_image_pointer_becomes_an_image_part(by_key, document):
    question = by_key[GEL_QUESTION]
    assert question.parts[0] == {"type": "image", "url": "file-service://file-7QmZbR3x1sWk9Ydc2TnA5p"}
    assert question.text.startswith("This is my 1.2% agarose gel of colony PCR")
    assert question.created_at == datetime(2024, 5, 13, 6, 0, 10, 500000, tzinfo=UTC)
    assert question.raw is document["mapping"][GEL_QUESTION]
    assert question.source_path == f"/mapping/{GEL_QUESTION}"


def test_thoughts_become_reasoning_and_the_recap_is_text(by_key):
    assert by_key[THOUGHTS].parts == []
    assert by_key[THOUGHTS].reasoning.startswith("Reading the ladder\nThe ladder bands at 1,000 and 1,500 bp")
    assert "Checking the empty-vector control" in by_key[THOUGHTS].reasoning
    assert by_key[RECAP].text == "Thought for 12 seconds"


def test_user_editable_context_gets_a_readable_text(by_key):
    assert by_key[USER_CONTEXT].text == (
        "I am a molecular biology PhD student working with E. coli and HEK293 cells.\nBe concise; give volumes in µL."
    )


def test_author_fields_and_message_extras(by_key):
    output = by_key[PYTHON_OUTPUT]
    assert (output.role, output.name) == ("tool", "python")
    assert output.author_metadata == {}
    assert by_key[REGENERATED_ANSWER].extra["metadata"]["model_slug"] == "o3"
    assert by_key[REGENERATED_ANSWER].extra["status"] == "finished_successfully"


def test_assistant_message_addressed_to_python_is_a_tool_call(by_key):
    caller = by_key[PYTHON_CALL]
    assert caller.recipient == "python"
    [call] = caller.tool_calls
    assert (call.call_id, call.type, call.name) == (PYTHON_CALL, "recipient", "python")
    assert call.arguments.startswith("ladder_ng = 50\n")
    assert call.arguments == caller.text
    assert call.arguments_error == ""


def test_tool_output_answers_the_call_of_its_branch(by_key):
    assert by_key[PYTHON_OUTPUT].tool_call_id == PYTHON_CALL
    assert by_key[PYTHON_OUTPUT].text == "lane 2: 39.8 ng\nlane 4: 32.4 ng\nlane 5: 14.5 ng"
    assert by_key[PLOT_ERROR].tool_call_id == PLOT_CALL


def test_browser_results_answer_the_browser_call(by_key, document):
    assert by_key[BROWSER_CALL].tool_calls[0].arguments.startswith('search("NEB Q5')
    assert by_key[BROWSING_DISPLAY].tool_call_id == BROWSER_CALL
    assert by_key[BROWSING_DISPLAY].text.startswith("# 【0†Q5 High-Fidelity DNA Polymerase")
    assert by_key[QUOTE].tool_call_id == BROWSER_CALL
    assert by_key[QUOTE].text == (
        "Q5 High-Fidelity DNA Polymerase | NEB (https://www.neb.com/en/products/m0491-q5-high-fidelity-dna-polymerase)\n"
        + document["mapping"][QUOTE]["message"]["content"]["text"]
    )


def test_system_error_content_gets_name_and_text(by_key):
    assert by_key[PLOT_ERROR].text == (
        "ExecutionTimeout: The code execution exceeded the 60 second limit and the kernel was restarted."
    )


def test_model_name_falls_back_to_the_last_message_model_slug():
    tae, autoclave = (parse_document(item) for item in load_fixture("chatgpt_export/conversations.json"))
    assert tae.model_name == "gpt-4o-mini"
    assert tae.model is None
    assert autoclave.model_name == "gpt-4o"
    assert autoclave.messages[0].hidden
    assert autoclave.metadata["is_archived"] is True


def conversation_with(*nodes, current_node=None):
    mapping: dict[str, dict[str, Any]] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    for node_id, parent, role, author_name, recipient, text in nodes:
        mapping[node_id] = {
            "id": node_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": node_id,
                "author": {"role": role, "name": author_name, "metadata": {}},
                "content": {"content_type": "text", "parts": [text]},
                "recipient": recipient,
            },
        }
    return {"id": "conv", "mapping": mapping, "current_node": current_node}


def test_a_tool_message_with_no_call_in_its_turn_is_an_orphan_and_a_call_never_answered_is_flagged():
    conversation = chatgpt_export.parse(
        conversation_with(
            ("a", "root", "assistant", None, "python", "print(1)"),
            ("u", "a", "user", None, "all", "ok"),
            ("t", "u", "tool", "python", "all", "1"),
        )
    )
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/mapping/t", "orphan result: no earlier message of this turn calls 'python'"),
        ("/mapping/a", "unanswered call: 'python' never answers"),
    ]


def test_current_node_without_a_message_points_at_its_nearest_message():
    document = conversation_with(("u", "root", "user", None, "all", "Hi"))
    document["mapping"]["empty"] = {"id": "empty", "message": None, "parent": "u", "children": []}
    document["current_node"] = "empty"
    assert chatgpt_export.parse(document).active_leaf_key == "u"


def test_unknown_current_node_is_a_warning():
    conversation = chatgpt_export.parse(conversation_with(("u", "root", "user", None, "all", "Hi"), current_node="x"))
    assert conversation.active_leaf_key is None
    assert [warning.path for warning in conversation.warnings] == ["/current_node"]


def test_unknown_content_type_is_kept_as_an_unknown_part():
    document = conversation_with(("u", "root", "user", None, "all", "Hi"))
    content = {"content_type": "app_pairing_content", "workspaces": []}
    document["mapping"]["u"]["message"]["content"] = content
    assert chatgpt_export.parse(document).messages[0].parts == [{"type": "unknown", "raw": content}]


# --- message_feedback.json -------------------------------------------------------------------------------------


def test_message_feedback_is_attached_to_the_matching_conversations():
    pcr = parse_document(load_fixture("chatgpt_export/colony_pcr_branches_and_tools.json"))
    tae, autoclave = (parse_document(item) for item in load_fixture("chatgpt_export/conversations.json"))
    feedback = load_fixture("chatgpt_export/message_feedback.json")

    warnings = chatgpt_export.apply_message_feedback([pcr, tae, autoclave], feedback)

    assert [(item.message_key, item.score, item.comment) for item in pcr.feedback] == [
        (QUANTIFIED_ANSWER, 1, "Correct normalisation to the ladder band."),
        (FIRST_ANSWER, -1, "Colony 5 is too weak to call; and it ignored the empty-vector control."),
    ]
    assert {item.origin for item in pcr.feedback} == {FEEDBACK_ORIGIN_CHATGPT}
    assert pcr.feedback[1].raw is feedback[1]
    assert [(item.score, item.comment) for item in tae.feedback] == [(1, "")]
    assert autoclave.feedback == []
    assert [(warning.path, warning.message.split(";")[0]) for warning in warnings] == [
        ("/3/conversation_id", "no conversation '6643aaaa-0000-8000-8000-000000000000'"),
        ("/4/message_id", "no message 'adbc2446-a76c-57ca-95d3-0056d297c277' in that conversation"),
    ]


def test_feedback_content_that_is_plain_text_is_the_comment():
    conversation = chatgpt_export.parse(conversation_with(("u", "root", "user", None, "all", "Hi")))
    chatgpt_export.apply_message_feedback(
        [conversation], [{"conversation_id": "conv", "message_id": "u", "rating": "thumbsDown", "content": "Too vague"}]
    )
    assert [(item.score, item.comment) for item in conversation.feedback] == [(-1, "Too vague")]


def test_feedback_with_an_unknown_rating_is_a_warning():
    conversation = chatgpt_export.parse(conversation_with(("u", "root", "user", None, "all", "Hi")))
    warnings = chatgpt_export.apply_message_feedback(
        [conversation], [{"conversation_id": "conv", "message_id": "u", "rating": "meh"}, "not an entry"]
    )
    assert conversation.feedback == []
    assert [warning.path for warning in warnings] == ["/0/rating", "/1"]


# --- OpenAI-style keys in message metadata (written by this application's chatgpt_export exporter) -------------

RECORD = "airalogy.id.record.9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d.v.3"
RECORD2 = "airalogy.id.record.0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.v.1"


@pytest.fixture(scope="module")
def app_export():
    return parse_document(load_fixture("chatgpt_export/app_export_with_metadata_tool_calls.json"))


def test_real_exports_have_no_artifacts_and_keep_their_recipient_calls(conversation, by_key):
    assert conversation.artifacts == []
    assert [(message.key, call.type) for message in conversation.messages for call in message.tool_calls] == [
        (PYTHON_CALL, "recipient"),
        (BROWSER_CALL, "recipient"),
        (PLOT_CALL, "recipient"),
    ]


def test_tool_calls_results_and_reasoning_are_read_from_message_metadata(app_export):
    by_key = {message.key: message for message in app_export.messages}
    [call] = by_key["a1"].tool_calls
    assert (call.call_id, call.type, call.name) == ("call_records", "function", "inject_airalogy_records")
    assert call.parsed_arguments == {"airalogy_record_ids": [RECORD, RECORD2]}
    assert by_key["a1"].recipient == "all"
    assert by_key["a1"].reasoning == "Both runs are records: inject them and compare the Ct means."
    assert by_key["t1"].tool_call_id == "call_records"
    assert by_key["a2"].reasoning == "2^1.5 ≈ 2.8."
    assert by_key["a1"].extra["metadata"]["tool_calls"][0]["id"] == "call_records"  # the metadata stays verbatim
    assert app_export.active_leaf_key == "a2"
    assert app_export.warnings == []


def test_injections_in_metadata_tool_calls_become_artifacts(app_export):
    assert [(a.kind, a.artifact_id, a.message_key, a.requested, a.resolved) for a in app_export.artifacts] == [
        ("record", RECORD, "a1", True, True),
        ("record", RECORD2, "a1", True, True),
    ]


def with_metadata(document, node_id, **metadata):
    document["mapping"][node_id]["message"]["metadata"] = metadata
    return document


def test_metadata_results_are_linked_by_id_and_loose_ends_are_warnings():
    document = conversation_with(
        ("a", "root", "assistant", None, "all", ""),
        ("t", "a", "tool", None, "all", "1"),
        ("t2", "t", "tool", None, "all", "2"),
    )
    with_metadata(
        document, "a", tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{x"}}]
    )
    with_metadata(document, "t2", tool_call_id="c9")
    conversation = chatgpt_export.parse(document)
    assert [(warning.path, warning.message.split(":")[0]) for warning in conversation.warnings] == [
        ("/mapping/a/message/metadata/tool_calls/0", "arguments are not valid JSON"),
        ("/mapping/t", "orphan result"),
        ("/mapping/t2", "orphan result"),
        ("/mapping/a/message/metadata/tool_calls/0", "unanswered call"),
    ]
    assert conversation.warnings[2].message == "orphan result: tool_call_id 'c9' matches no call"


def test_a_metadata_tool_call_id_may_name_a_recipient_call():
    document = conversation_with(
        ("a", "root", "assistant", None, "python", "print(1)"),
        ("t", "a", "tool", "python", "all", "1"),
    )
    with_metadata(document, "t", tool_call_id="a")
    conversation = chatgpt_export.parse(document)
    assert conversation.messages[1].tool_call_id == "a"
    assert conversation.warnings == []


def test_metadata_tool_calls_that_cannot_be_read_are_warnings_not_errors():
    document = conversation_with(("a", "root", "assistant", None, "all", "Hi"))
    with_metadata(document, "a", tool_calls={"not": "a list"}, reasoning_content=3)
    conversation = chatgpt_export.parse(document)
    message = conversation.messages[0]
    assert (message.tool_calls, message.reasoning) == ([], "")
    assert message.extra["metadata"] == {"tool_calls": {"not": "a list"}, "reasoning_content": 3}
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/mapping/a/message/metadata/reasoning_content", "reasoning_content is not a string; kept in extra"),
        ("/mapping/a/message/metadata/tool_calls", "tool_calls must be a list; ignored"),
    ]
