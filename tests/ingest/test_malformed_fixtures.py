import pytest

from chats.formats.canonical import ParseError
from chats.ingest import parse_document
from tests.factories.documents import fixture_name, load_fixture, malformed_documents

CONVERSATION = "/mapping/dbe66777-7978-5696-bde3-e1d2af6965a4"
CYCLE_NODES = [
    "060e8018-1d87-522a-8531-7b42068f07ea",
    "04bb5eae-0275-571f-866a-00364090e76a",
    "bb0e2593-1fac-5b63-bf50-cbf51ac7cf3c",
]

EXPECTED_ERRORS = {
    "openai/malformed/message_without_role.json": [("/2/role", "a message needs a role (a non-empty string)")],
    "openai/malformed/part_is_a_number.json": [("/0/content/1", "a content part must be an object or a string")],
    "openai/malformed/message_is_a_string.json": [("/1", "a message must be an object")],
    "openai/malformed/empty_list.json": [("", "the conversation has no messages")],
    "chat_document/malformed/tool_call_not_an_object.json": [
        ("/main_messages/3/tool_calls/0", "a tool call must be an object")
    ],
    "chat_document/malformed/several_errors.json": [
        ("/scenario_messages/0/role", "a message needs a role (a non-empty string)"),
        ("/main_messages/2/content", "content must be a string, null or a list of parts"),
    ],
    "chat_document/malformed/chat_id_is_an_object.json": [
        ("/chat_id", "the conversation id must be a non-empty string")
    ],
    "record_qa/malformed/tool_call_without_name.json": [
        ("/main_messages/1/tool_calls/1", "a tool call needs a function name")
    ],
    "chat_history/malformed/content_is_a_number.json": [
        ("/chat_history/1/content", "content must be a string, null or a list of parts")
    ],
    "chat_graph/malformed/duplicate_node_id.json": [
        ("/nodes/2/node_id", "duplicate node_id 'node-2' (first at /nodes/1)")
    ],
    "chat_graph/malformed/parent_cycle.json": [
        ("/nodes/1/parent_id", "node 'node-2' is in or under a cycle of parent_id links"),
        ("/nodes/2/parent_id", "node 'node-3' is in or under a cycle of parent_id links"),
    ],
    "chat_graph/malformed/node_without_role.json": [
        ("/nodes/1/message/author/role", "a message needs a role (a non-empty string)")
    ],
    "chatgpt_export/malformed/author_without_role.json": [
        (f"{CONVERSATION}/message/author/role", "a message needs a role (a non-empty string)")
    ],
    "chatgpt_export/malformed/parent_cycle.json": [
        (f"/mapping/{node}/parent", f"node '{node}' is in or under a cycle of parents") for node in CYCLE_NODES
    ],
    "openwebui/malformed/parent_cycle.json": [
        (f"/chat/history/messages/{key}/parentId", f"message '{key}' is in or under a cycle of parents")
        for key in ("m2", "m3")
    ],
    "openwebui/malformed/message_without_role.json": [
        ("/0/chat/history/messages/m2/role", "a message needs a role (a non-empty string)")
    ],
}


def test_every_malformed_fixture_has_its_expected_errors_listed():
    on_disk = {fixture_name(path) for path in malformed_documents()}
    assert on_disk == set(EXPECTED_ERRORS)


@pytest.mark.parametrize("fixture", sorted(EXPECTED_ERRORS))
def test_malformed_fixture_is_rejected_with_every_error_at_its_json_path(fixture):
    with pytest.raises(ParseError) as caught:
        parse_document(load_fixture(fixture), format=fixture.split("/")[0])
    assert [(error.path, error.message) for error in caught.value.errors] == EXPECTED_ERRORS[fixture]


@pytest.mark.parametrize("fixture", sorted(EXPECTED_ERRORS))
def test_malformed_fixture_is_still_detected_as_its_format(fixture):
    with pytest.raises(ParseError) as caught:
        parse_document(load_fixture(fixture))
    assert caught.value.errors[0].message == EXPECTED_ERRORS[fixture][0][1]
