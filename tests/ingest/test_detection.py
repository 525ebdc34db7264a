import pytest

from chats.formats.canonical import FORMATS, ParseError
from chats.ingest import detect_format, parse_document
from tests.factories.documents import fixture_name, load_fixture, valid_documents

NOT_ONE_CONVERSATION = {"chatgpt_export/conversations.json"}  # a whole export: several conversations
VALID_FIXTURES = [name for path in valid_documents() if (name := fixture_name(path)) not in NOT_ONE_CONVERSATION]


def test_there_is_a_fixture_directory_with_valid_documents_for_every_format():
    assert {fixture.split("/")[0] for fixture in VALID_FIXTURES} == set(FORMATS)


@pytest.mark.parametrize("fixture", VALID_FIXTURES)
def test_every_fixture_is_detected_as_the_format_of_its_directory(fixture):
    assert detect_format(load_fixture(fixture)) == fixture.split("/")[0]


@pytest.mark.parametrize("fixture", VALID_FIXTURES)
def test_every_fixture_parses_in_its_named_format(fixture):
    format_name = fixture.split("/")[0]
    conversation = parse_document(load_fixture(fixture), format=format_name)
    assert conversation.format == format_name
    assert conversation.messages


def test_record_qa_is_told_apart_from_a_chat_document_by_its_context_object():
    document = {"main_messages": [{"role": "user", "content": "Hi"}]}
    assert detect_format(document) == "chat_document"
    assert detect_format({**document, "context": {"inject_airalogy_protocols": {"enabled": False}}}) == "record_qa"


def test_chat_document_is_detected_from_history_or_messages():
    assert detect_format({"chat_id": "c1", "history": []}) == "chat_document"
    assert detect_format({"chat_id": "c1", "messages": []}) == "chat_document"


def test_a_whole_conversations_json_array_is_detected_as_chatgpt_export():
    assert detect_format(load_fixture("chatgpt_export/conversations.json")) == "chatgpt_export"


def test_any_other_array_is_an_openai_message_list():
    assert detect_format([]) == "openai"
    assert detect_format([{"role": "user", "content": "Hi"}]) == "openai"


@pytest.mark.parametrize("document", [{"chat": []}, "text", 42, None, {"nodes": "not a list"}])
def test_an_unrecognised_shape_is_an_error_listing_the_accepted_shapes(document):
    with pytest.raises(ParseError) as caught:
        detect_format(document)
    [error] = caught.value.errors
    assert error.path == ""
    for format_name in FORMATS:
        assert format_name in error.message
    assert "an object with a 'nodes' list" in error.message


def test_a_named_format_that_does_not_match_says_what_it_expects():
    with pytest.raises(ParseError) as caught:
        parse_document(load_fixture("openai/legacy_function_call.json"), format="chat_graph")
    assert [error.as_dict() for error in caught.value.errors] == [
        {
            "path": "",
            "message": "format 'chat_graph' expects an object with a 'nodes' list "
            "(or such an object under a 'chat_graph' key)",
        }
    ]


@pytest.mark.parametrize(
    ("format_name", "expected"),
    [
        ("openai", "format 'openai' expects a JSON array of message objects"),
        ("chat_document", "format 'chat_document' expects an object with a 'main_messages', 'messages' or"),
        ("record_qa", "format 'record_qa' expects an object with a 'main_messages' list and a 'context' object"),
        ("chat_history", "format 'chat_history' expects an object with a 'chat_history' list"),
        ("chatgpt_export", "format 'chatgpt_export' expects an object with a 'mapping' object"),
    ],
)
def test_each_named_format_explains_its_shape_when_the_document_does_not_match(format_name, expected):
    with pytest.raises(ParseError) as caught:
        parse_document({"title": "none of them"}, format=format_name)
    assert caught.value.errors[0].message.startswith(expected)


def test_a_chat_document_may_be_parsed_as_named_even_when_it_has_a_context():
    conversation = parse_document(load_fixture("record_qa/seed_protocol_injection.json"), format="chat_document")
    assert conversation.format == "chat_document"
    assert conversation.injection_context is None
    assert "context" in conversation.metadata


def test_an_unknown_format_name_is_an_error_listing_the_formats():
    with pytest.raises(ParseError) as caught:
        parse_document([], format="sharegpt")
    message = caught.value.errors[0].message
    assert message.startswith("unknown format 'sharegpt'")
    assert ", ".join(FORMATS) in message


def test_a_conversations_json_of_several_conversations_cannot_be_parsed_as_one():
    with pytest.raises(ParseError) as caught:
        parse_document(load_fixture("chatgpt_export/conversations.json"))
    assert "2 conversations" in caught.value.errors[0].message


def test_a_conversations_json_of_one_conversation_parses_as_that_conversation():
    [first, _] = load_fixture("chatgpt_export/conversations.json")
    assert parse_document([first]).external_id == first["id"]
