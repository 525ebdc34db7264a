"""Injected artifacts (chats/ingest/injections.py): read from the injection calls and their results, at every turn
of a Record QA document and on their own."""

import json

import pytest

from chats.ingest import parse_document
from chats.ingest.injections import extract_artifacts, id_well_formed, injection_kind
from chats.ingest.openai import parse_messages
from tests.factories.documents import load_fixture

P_LAB = "airalogy.id.lab.molecular_biology.project.qpcr_validation.protocol.sybr_green_qpcr.v.1.2.0"
R1 = "airalogy.id.record.3f9c2a1e-7b4d-4c8a-9e2f-6a1b5c7d8e90.v.2"
R2 = "airalogy.id.record.a7e1d3c5-9b2f-4e6a-8c1d-5f3b7a9e2c40"
D1 = "airalogy.id.discussion.c2d4e6f8-1a3b-4c5d-9e7f-0a2b4c6d8e1f"
P_SHORT = "airalogy.id.protocol.6e8a0c2e-4f6b-4d8c-a0e2-3b5d7f9a1c3e.v.3"
P_BAD = "airalogy.id.lab.Molecular-Biology.project.qpcr.protocol.standard_curve.v.1.0"
P_SINGLE = "airalogy.id.protocol.9d1f3b5d-7e9a-4b1c-8d3e-5f7a9b1c3d5e"
F1 = "airalogy.id.file.4b6d8f0a-2c4e-4f6a-8b0c-2d4f6a8b0c2e.csv"


@pytest.fixture(scope="module")
def multi_turn():
    return parse_document(load_fixture("record_qa/multi_turn_injections.json"))


def summary(artifact):
    return (artifact.tool_call_id, artifact.kind, artifact.artifact_id, artifact.requested, artifact.resolved)


# --- injections at every turn of a Record QA document ----------------------------------------------------------


def test_injections_at_every_turn_give_one_artifact_per_id_per_call(multi_turn):
    assert [summary(artifact) for artifact in multi_turn.artifacts] == [
        ("call_p1", "protocol", P_LAB, True, True),
        ("call_r1", "record", R1, True, True),
        ("call_r1", "record", R2, True, True),
        ("call_d1", "discussion", D1, True, True),
        ("call_rec", "protocol", P_SHORT, False, True),
        ("call_rec", "protocol", P_BAD, False, True),
        ("call_f1", "file", F1, True, False),
        ("call_p2", "protocol", P_SINGLE, True, True),
    ]


def test_artifacts_point_at_the_assistant_message_and_tool_of_their_call(multi_turn):
    by_call = {artifact.tool_call_id: artifact for artifact in multi_turn.artifacts}
    assert by_call["call_r1"].message_key == multi_turn.messages[4].key
    assert by_call["call_d1"].message_key == multi_turn.messages[4].key
    assert by_call["call_d1"].tool_name == "inject_airalogy_discussions"
    assert by_call["call_rec"].tool_name == "recommend_airalogy_protocols"
    assert by_call["call_f1"].tool_name == "processing_user_uploaded_csv_file"


def test_resolved_payload_is_the_item_verbatim(multi_turn):
    document = load_fixture("record_qa/multi_turn_injections.json")
    records = json.loads(document["main_messages"][6]["content"])["airalogy_records"]
    r1, r2 = (artifact for artifact in multi_turn.artifacts if artifact.kind == "record")
    assert r1.payload == records[0]
    assert r1.payload["data"]["check"]["single_melt_peak"]["checked"] is True
    assert r2.payload == records[1]


def test_items_keyed_id_are_understood(multi_turn):
    discussion = next(artifact for artifact in multi_turn.artifacts if artifact.kind == "discussion")
    assert discussion.payload["id"] == D1
    assert discussion.payload["content"].startswith("On plate QPCR-2024-05-02")
    single = multi_turn.artifacts[-1]
    assert single.payload["id"] == P_SINGLE


def test_id_well_formedness_per_artifact(multi_turn):
    assert {artifact.artifact_id: artifact.id_well_formed for artifact in multi_turn.artifacts} == {
        P_LAB: True,
        R1: True,
        R2: True,
        D1: True,
        P_SHORT: True,
        P_BAD: False,
        F1: True,
        P_SINGLE: True,
    }


def test_malformed_id_and_non_json_result_are_warnings_not_errors(multi_turn):
    assert [(warning.path, warning.message) for warning in multi_turn.warnings] == [
        ("/main_messages/11/content", f"'{P_BAD}' is not a well-formed protocol id"),
        (
            "/main_messages/12/content",
            "injection result is not JSON (Expecting value: line 1 column 1 (char 0)); "
            "artifacts come from the arguments only",
        ),
    ]


# --- injections on their own -----------------------------------------------------------------------------------


def injection_artifacts(arguments, result_content, name="inject_airalogy_protocols"):
    messages, _ = parse_messages(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": result_content},
        ],
        path="/main_messages",
    )
    return extract_artifacts(messages)


@pytest.mark.parametrize(
    ("tool_name", "kind"),
    [
        ("inject_airalogy_protocols", "protocol"),
        ("inject_airalogy_records", "record"),
        ("inject_airalogy_discussions", "discussion"),
        ("inject_airalogy_datasets", "other"),
        ("recommend_airalogy_protocols", "protocol"),
        ("processing_user_uploaded_pdf_file", "file"),
        ("processing_user_uploaded_image_file", "file"),
        ("airalogy_search", None),
        ("processing_user_uploaded_file", None),
    ],
)
def test_injection_kind_comes_from_the_tool_name(tool_name, kind):
    assert injection_kind(tool_name) == kind


@pytest.mark.parametrize(
    ("kind", "artifact_id", "well_formed"),
    [
        ("protocol", P_LAB, True),
        ("protocol", "airalogy.id.protocol.6e8a0c2e-4f6b-4d8c-a0e2-3b5d7f9a1c3e", True),
        ("protocol", "airalogy.id.protocol.6e8a0c2e-4f6b-4d8c-a0e2-3b5d7f9a1c3e.v.1.0.2", True),
        ("protocol", "airalogy.id.lab.example.protocol.v.0.0.1", False),
        ("protocol", P_BAD, False),
        ("protocol", "airalogy.id.protocol.not-a-uuid", False),
        ("record", R1, True),
        ("record", R2, True),
        ("record", R2 + ".v.x", False),
        ("discussion", D1, True),
        ("discussion", D1 + ".v.1", False),
        ("file", F1, True),
        ("file", "airalogy.id.file.4b6d8f0a-2c4e-4f6a-8b0c-2d4f6a8b0c2e", False),
        ("other", "anything.at.all", True),
    ],
)
def test_artifact_id_well_formedness(kind, artifact_id, well_formed):
    assert id_well_formed(kind, artifact_id) is well_formed


def test_requested_ids_only_when_the_call_has_no_result():
    messages, _ = parse_messages(
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "function": {
                            "name": "inject_airalogy_records",
                            "arguments": json.dumps({"airalogy_record_ids": [R1]}),
                        },
                    }
                ],
            }
        ],
        path="",
    )
    artifacts, warnings = extract_artifacts(messages)
    assert [summary(artifact) for artifact in artifacts] == [("c1", "record", R1, True, False)]
    assert artifacts[0].payload is None
    assert warnings == []


def test_a_bare_list_result_is_read_as_the_items():
    artifacts, _ = injection_artifacts("{}", json.dumps([{"airalogy_protocol_id": P_SHORT, "markdown": "# A"}]))
    assert [summary(artifact) for artifact in artifacts] == [("c1", "protocol", P_SHORT, False, True)]


def test_a_single_item_result_is_read_as_one_item():
    artifacts, _ = injection_artifacts("{}", json.dumps({"airalogy_protocol_id": P_SHORT, "steps": [{"n": 1}]}))
    assert [artifact.payload for artifact in artifacts] == [{"airalogy_protocol_id": P_SHORT, "steps": [{"n": 1}]}]


def test_a_result_in_text_parts_is_read():
    content = [{"type": "text", "text": json.dumps({"airalogy_protocols": [{"id": P_SHORT}]})}]
    artifacts, _ = injection_artifacts(json.dumps({"airalogy_protocol_ids": [P_SHORT]}), content)
    assert [summary(artifact) for artifact in artifacts] == [("c1", "protocol", P_SHORT, True, True)]


def test_a_record_item_is_identified_by_its_record_id_not_its_protocol_id():
    item = {"airalogy_protocol_id": P_LAB, "airalogy_record_id": R1, "data": {"var": {}, "step": {}, "check": {}}}
    artifacts, _ = injection_artifacts("{}", json.dumps({"airalogy_records": [item]}), name="inject_airalogy_records")
    assert [artifact.artifact_id for artifact in artifacts] == [R1]


def test_the_same_id_requested_twice_is_one_artifact():
    artifacts, _ = injection_artifacts(json.dumps({"airalogy_protocol_ids": [P_SHORT, P_SHORT]}), "[]")
    assert [artifact.artifact_id for artifact in artifacts] == [P_SHORT]


def test_any_list_under_a_key_ending_in_ids_is_read():
    arguments = json.dumps({"protocol_ids": [P_SHORT], "chat_id": "airalogy.id.chat.x", "top_k": 3})
    artifacts, _ = injection_artifacts(arguments, "[]")
    assert [artifact.artifact_id for artifact in artifacts] == [P_SHORT]


def test_a_resolved_item_without_an_id_gives_a_warning():
    artifacts, warnings = injection_artifacts("{}", json.dumps({"airalogy_protocols": [{"markdown": "# A"}]}))
    assert artifacts == []
    assert [(warning.path, warning.message) for warning in warnings] == [
        ("/main_messages/1/content", "a resolved protocol has no id; it is not recorded as an artifact")
    ]


def test_a_requested_id_that_is_not_a_string_gives_a_warning():
    artifacts, warnings = injection_artifacts(json.dumps({"airalogy_protocol_ids": [P_SHORT, 42]}), "[]")
    assert [artifact.artifact_id for artifact in artifacts] == [P_SHORT]
    assert [(warning.path, warning.message) for warning in warnings] == [
        ("/main_messages/0/tool_calls/0", "requested artifact id 42 is not a string; ignored")
    ]


def test_invalid_arguments_still_let_the_result_resolve_artifacts():
    artifacts, _ = injection_artifacts('{"airalogy_protocol_ids": [', json.dumps([{"id": P_SHORT}]))
    assert [summary(artifact) for artifact in artifacts] == [("c1", "protocol", P_SHORT, False, True)]


def test_calls_that_are_not_injections_give_no_artifacts():
    conversation = parse_document(load_fixture("openai/pcr_nonspecific_bands_tool_call.json"))
    assert conversation.artifacts == []
