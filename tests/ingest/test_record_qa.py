"""The Record QA document (chats/ingest/record_qa.py): a chat document with the injection context it was given.
Its injections, artifact by artifact, are tested in tests/ingest/test_injections.py."""

import pytest

from chats.ingest import parse_document, record_qa
from tests.factories.documents import load_fixture


@pytest.fixture(scope="module")
def multi_turn():
    return parse_document(load_fixture("record_qa/multi_turn_injections.json"))


def test_seed_record_qa_document_parses_with_its_context():
    document = load_fixture("record_qa/seed_protocol_injection.json")
    conversation = parse_document(document)
    assert conversation.format == "record_qa"
    assert conversation.external_id is None
    assert conversation.injection_context is document["context"]
    assert conversation.metadata == {}
    assert [message.role for message in conversation.messages] == ["user", "assistant", "tool", "assistant"]


def test_seed_protocol_id_is_flagged_as_malformed_but_kept_whole():
    conversation = parse_document(load_fixture("record_qa/seed_protocol_injection.json"))
    [artifact] = conversation.artifacts
    assert artifact.artifact_id == "airalogy.id.lab.example.protocol.v.0.0.1"
    assert artifact.id_well_formed is False
    assert artifact.requested and artifact.resolved
    assert artifact.payload["field_json_schema"]["required"] == ["culture_volume_ml", "dna_ng_per_ul"]
    # The context lists the same malformed id: flagged there too, where it stands.
    assert [(warning.path, warning.message) for warning in conversation.warnings] == [
        (
            "/main_messages/1/tool_calls/0",
            "'airalogy.id.lab.example.protocol.v.0.0.1' is not a well-formed protocol id",
        ),
        (
            "/context/inject_airalogy_protocols/airalogy_protocol_ids/0",
            "'airalogy.id.lab.example.protocol.v.0.0.1' is not a well-formed protocol id",
        ),
    ]


def test_record_qa_keeps_wrapper_fields(multi_turn):
    assert multi_turn.external_id == "airalogy.id.chat.e8f0a2c4-6b8d-4f0a-9c2e-4a6c8e0a2c4e"
    assert multi_turn.model_name == "qwen3.5-plus"
    assert multi_turn.injection_context["inject_airalogy_discussions"]["scope"] == "protocol"
    assert multi_turn.metadata == {}


def test_record_qa_with_a_non_object_context_is_not_record_qa():
    assert not record_qa.matches({"context": [["a", "b"]], "main_messages": []})
