"""JSON held inside text (tool-call arguments, legacy function_call, Record QA injection results, a ChatGPT thumbs
entry's content): the text is kept exactly as received, and its decoded value is used only when it is storable
(`chats.storable.parsed_if_storable`). An escaped NUL or unpaired surrogate, or nesting too deep, never reaches a
jsonb column."""

import json

import pytest

from chats import storable
from chats.ingest import chatgpt_export, parse_document
from chats.ingest.common import json_in_text, parse_arguments
from chats.ingest.injections import extract_artifacts
from chats.ingest.openai import parse_messages

NUL = '{"a": "\\u0000"}'  # the text holds the six characters \u0000: storable text, unstorable once decoded
SURROGATE = '{"a": "\\ud800"}'
DEEP = "[" * (storable.MAX_DEPTH + 1) + "]" * (storable.MAX_DEPTH + 1)
UNSTORABLE = pytest.mark.parametrize(
    ("text", "pointer"),
    [(NUL, "/a"), (SURROGATE, "/a"), (DEEP, "/0" * storable.MAX_DEPTH)],
    ids=["nul", "surrogate", "deep"],
)


@UNSTORABLE
def test_json_in_text_drops_a_decoded_value_that_cannot_be_stored_and_says_where(text, pointer):
    value, not_json, unstored = json_in_text(text)
    assert value is None and not_json == ""
    assert unstored.startswith(f"the decoded value cannot be stored (at '{pointer}': ")
    assert storable.text_reason(unstored) is None


def test_json_in_text_decodes_what_is_storable_and_explains_what_is_not_json():
    assert json_in_text('{"a": [1, "\\u00e9"]}') == ({"a": [1, "é"]}, "", "")
    assert json_in_text("null") == (None, "", "")
    value, not_json, unstored = json_in_text("{oops")
    assert value is None and not_json.startswith("Expecting property name") and unstored == ""


@UNSTORABLE
def test_tool_call_arguments_keep_their_text_and_drop_the_unstorable_parse(text, pointer):
    document = [
        {"role": "user", "content": "Which primer?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": text}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "none"},
    ]  # fmt: skip
    conversation = parse_document(document)

    [call] = conversation.messages[1].tool_calls
    assert call.arguments == text  # exactly as received
    assert call.parsed_arguments is None
    assert call.arguments_error.startswith("valid JSON, but the decoded value cannot be stored")
    assert ("/1/tool_calls/0", f"arguments are {call.arguments_error}") in [
        (warning.path, warning.message) for warning in conversation.warnings
    ]
    assert storable.unstorable([call.arguments, call.arguments_error, call.parsed_arguments]) is None


@UNSTORABLE
def test_legacy_function_call_arguments_follow_the_same_rule(text, pointer):
    document = [
        {"role": "user", "content": "Which primer?"},
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": text}},
    ]
    [call] = parse_document(document).messages[1].tool_calls
    assert call.arguments == text and call.parsed_arguments is None
    assert call.arguments_error.startswith("valid JSON, but")


def test_a_chatgpt_tool_input_that_decodes_to_unstorable_json_is_kept_as_text():
    node = {
        "id": "a",
        "parent": "root",
        "children": [],
        "message": {
            "id": "a",
            "author": {"role": "assistant", "metadata": {}},
            "content": {"content_type": "text", "parts": [NUL]},
            "recipient": "python",
        },
    }
    root = {"id": "root", "message": None, "parent": None, "children": ["a"]}
    conversation = chatgpt_export.parse({"id": "conv", "mapping": {"root": root, "a": node}, "current_node": "a"})
    [call] = conversation.messages[0].tool_calls
    assert call.arguments == NUL and call.parsed_arguments is None


@UNSTORABLE
def test_an_injection_result_whose_items_cannot_be_stored_records_no_payload_and_warns(text, pointer):
    protocol = "airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1"
    result = (
        json.dumps({"protocols": [{"airalogy_protocol_id": protocol, "body": "x"}]})[:-1] + ', "bad": ' + text + "}"
    )
    messages, _ = parse_messages(
        [
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "inject_airalogy_protocols", "arguments": json.dumps({"airalogy_protocol_ids": [protocol]}),
            }}]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
        path="/main_messages",
    )  # fmt: skip
    artifacts, warnings = extract_artifacts(messages)

    assert messages[1].text == result  # the text stays, as received
    assert [(artifact.artifact_id, artifact.resolved, artifact.payload) for artifact in artifacts] == [
        (protocol, False, None)  # requested by the arguments; its payload is not taken from unstorable JSON
    ]
    assert any(
        warning.path == "/main_messages/1/content"
        and warning.message.startswith("injection result is JSON, but the decoded value cannot be stored")
        for warning in warnings
    )
    assert storable.unstorable([artifact.payload for artifact in artifacts]) is None


def test_a_thumbs_comment_written_as_json_that_cannot_be_stored_keeps_its_text():
    node = {
        "id": "u",
        "parent": "root",
        "children": [],
        "message": {
            "id": "u",
            "author": {"role": "user", "metadata": {}},
            "content": {"content_type": "text", "parts": ["Hi"]},
        },
    }
    root = {"id": "root", "message": None, "parent": None, "children": ["u"]}
    conversation = chatgpt_export.parse({"id": "conv", "mapping": {"root": root, "u": node}, "current_node": "u"})
    content = '{"text": "bad \\u0000 band", "tags": []}'
    chatgpt_export.apply_message_feedback(
        [conversation], [{"conversation_id": "conv", "message_id": "u", "rating": "thumbsDown", "content": content}]
    )
    assert [item.comment for item in conversation.feedback] == [content]


def test_parse_arguments_of_empty_text_is_no_error():
    assert parse_arguments("") == (None, "", "")
    assert parse_arguments("  ") == (None, "", "")
