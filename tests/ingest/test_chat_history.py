import pytest

from chats.formats.canonical import ParseError
from chats.ingest import chat_history, parse_document
from tests.factories.documents import load_fixture


def test_plain_chat_history_is_a_chain_without_an_id():
    conversation = parse_document(load_fixture("chat_history/plain.json"))
    assert conversation.format == "chat_history"
    assert conversation.external_id is None
    assert [message.role for message in conversation.messages] == ["user", "assistant", "user", "assistant"]
    assert conversation.messages[1].parent_key == conversation.messages[0].key
    assert conversation.messages[1].text.startswith("Use C1·V1 = C2·V2")
    assert conversation.messages[2].source_path == "/chat_history/2"
    assert conversation.warnings == []


def test_conversation_id_and_top_level_context_pairs():
    conversation = parse_document(load_fixture("chat_history/with_conversation_id_and_context.json"))
    assert conversation.external_id == "ch-2024-05-09-0007"
    assert conversation.context_pairs == [["lab", "Cell Biology Core"], ["user_role", "postdoc"], ["locale", "en-GB"]]
    assert conversation.metadata == {"logged_by": "masterbrain-logger 0.9.3"}


def test_message_context_pairs_move_to_their_field():
    messages = parse_document(load_fixture("chat_history/with_conversation_id_and_context.json")).messages
    assert messages[0].context_pairs == [
        ["instrument", "Heracell 150i, incubator B"],
        ["alarm_log", "2024-05-08 23:41 CO2 2.1% for 6 h"],
    ]
    assert "context" not in messages[0].extra
    assert messages[1].context_pairs == [["source", "airalogy.id.discussion.c2d4e6f8-1a3b-4c5d-9e7f-0a2b4c6d8e1f"]]
    assert messages[3].context_pairs == []


def test_invalid_message_context_is_kept_verbatim_in_extra_with_a_warning():
    conversation = parse_document(load_fixture("chat_history/with_conversation_id_and_context.json"))
    message = conversation.messages[2]
    assert message.context_pairs == []
    assert message.extra == {"context": [["ph_reading", 7.9], ["temperature_c", "37.0"]]}
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        ("/chat_history/2/context/0", "a context pair must be two strings; the context is kept verbatim")
    ]


def test_invalid_top_level_context_is_kept_in_metadata_with_a_warning():
    conversation = chat_history.parse({"chat_history": [{"role": "user", "content": "Hi"}], "context": "lab=core"})
    assert conversation.context_pairs == []
    assert conversation.metadata == {"context": "lab=core"}
    assert [warning.path for warning in conversation.warnings] == ["/context"]


def test_multimodal_chat_history_gives_image_parts():
    document = load_fixture("chat_history/multimodal.json")
    conversation = parse_document(document)
    user, assistant = conversation.messages[:2]
    assert user.parts == [
        {"type": "text", "text": document["chat_history"][0]["content"][0]["text"]},
        {"type": "image", "url": "https://lab.example.org/plates/2024-05-10-dh5a.jpg"},
    ]
    assert not user.content_is_string
    assert conversation.messages[2].parts[1] == {
        "type": "image",
        "url": "https://lab.example.org/plates/2024-05-10-xgal.jpg",
        "detail": "low",
    }
    assert assistant.text.startswith("Yes: round, smooth, off-white colonies")


def test_empty_chat_history_is_rejected():
    with pytest.raises(ParseError) as caught:
        chat_history.parse({"chat_history": []})
    assert [error.path for error in caught.value.errors] == ["/chat_history"]
