"""The Open WebUI exporter on hand-built conversations and on its own fixtures."""

from __future__ import annotations

import copy
from typing import Any

from chats.export import export_conversation
from chats.formats.canonical import Feedback, Message
from chats.ingest import parse_document
from tests.factories.documents import load_fixture
from tests.factories.exports import branched_conversation, injection_conversation, text_message, tool_conversation


def load(name: str) -> Any:
    return load_fixture(f"openwebui/{name}")


def test_every_branch_goes_into_history_with_parent_and_children_links() -> None:
    result = export_conversation(branched_conversation(format="chat_graph"), "openwebui")

    history = result.document["chat"]["history"]
    assert {key: (m["parentId"], m["childrenIds"]) for key, m in history["messages"].items()} == {
        "m1": (None, ["m2a", "m2b"]),
        "m2a": ("m1", []),
        "m2b": ("m1", ["m3"]),
        "m3": ("m2b", []),
    }
    assert history["currentId"] == "m3"
    assert history["messages"]["m1"] == {
        "id": "m1",
        "parentId": None,
        "childrenIds": ["m2a", "m2b"],
        "role": "user",
        "content": "How do I implement a neural network?",
        "timestamp": 1625216400,
    }
    assert [m["id"] for m in result.document["chat"]["messages"]] == ["m1", "m2b", "m3"]
    assert result.document["id"] == result.document["chat"]["id"] == "123456"
    assert result.omitted == []


def test_another_active_leaf_is_the_current_id_and_the_linear_copy() -> None:
    conversation = branched_conversation(format="chat_graph")
    conversation.active_leaf_key = "m2a"

    chat = export_conversation(conversation, "openwebui").document["chat"]

    assert chat["history"]["currentId"] == "m2a"
    assert [m["id"] for m in chat["messages"]] == ["m1", "m2a"]
    assert parse_document({"chat": chat}).active_leaf_key == "m2a"


def test_reasoning_goes_before_the_answer_as_a_details_block_and_reads_back() -> None:
    conversation = tool_conversation(format="openai")
    conversation.messages[4].reasoning = "Primer dimers run below 100 bp.\n> quoted"

    result = export_conversation(conversation, "openwebui")
    again = parse_document(result.document)

    content = result.document["chat"]["history"]["messages"]["m5"]["content"]
    assert content == (
        '<details type="reasoning" done="true">\n<summary>Thought</summary>\n'
        "> Primer dimers run below 100 bp.\n> > quoted\n</details>\nPossibly primer dimers."
    )
    answer = next(m for m in again.messages if m.key == "m5")
    assert (answer.text, answer.reasoning) == ("Possibly primer dimers.", "Primer dimers run below 100 bp.\n> quoted")


def test_tool_calls_and_results_ride_as_openai_style_keys_and_read_back() -> None:
    result = export_conversation(tool_conversation(format="openai"), "openwebui")
    again = parse_document(result.document)

    messages = result.document["chat"]["history"]["messages"]
    assert messages["m3"]["tool_calls"][0]["id"] == "call_abc123"
    assert messages["m4"]["tool_call_id"] == "call_abc123"
    by_key = {m.key: m for m in again.messages}
    assert [(c.call_id, c.name, c.arguments) for c in by_key["m3"].tool_calls] == [
        ("call_abc123", "airalogy_search", '{"keywords":["PCR"]}')
    ]
    assert by_key["m3"].reasoning == "I should search first."
    assert by_key["m4"].tool_call_id == "call_abc123"
    assert again.warnings == []
    assert result.omitted == []
    assert result.document["chat"]["models"] == ["qwen3.5-flash"]
    assert (result.document["user_id"], result.document["created_at"]) == ("u-1", 1740816000)


def test_injected_artifacts_come_back_from_the_injection_calls() -> None:
    result = export_conversation(injection_conversation(), "openwebui")
    again = parse_document(result.document)

    assert [(a.kind, a.artifact_id, a.requested, a.resolved) for a in again.artifacts] == [
        ("protocol", "airalogy.id.lab.example.project.demo.protocol.pcr.v.0.0.1", True, True)
    ]


def test_other_feedback_becomes_an_annotation_and_reads_back_as_a_rating() -> None:
    result = export_conversation(injection_conversation(), "openwebui")  # Masterbrain feedback on the answer
    again = parse_document(result.document)

    assert result.document["chat"]["history"]["messages"]["answer"]["annotation"] == {"rating": 1, "comment": "clear"}
    assert [(f.origin, f.message_key, f.score, f.comment) for f in again.feedback] == [
        ("openwebui", "answer", 1, "clear")
    ]


def test_one_rating_per_message_an_open_webui_one_first_and_the_rest_noted() -> None:
    conversation = tool_conversation(format="chat_graph")
    annotation = {"rating": -1, "reason": "Being lazy", "comment": "", "tags": ["short"]}
    conversation.feedback = [
        Feedback(origin="masterbrain", message_key="m5", score=1, comment="fine"),
        Feedback(origin="openwebui", message_key="m5", score=-1, comment="Being lazy", raw=annotation),
        Feedback(origin="chatgpt", message_key="m2", score=None, comment=""),
    ]

    result = export_conversation(conversation, "openwebui")

    messages = result.document["chat"]["history"]["messages"]
    assert messages["m5"]["annotation"] is annotation
    assert "annotation" not in messages["m2"]  # neither a thumb nor a comment: nothing to write
    assert "feedback beyond one rating per message (1)" in result.omitted


def test_a_received_chat_comes_back_exactly() -> None:
    document = load("colony_pcr_regenerated_and_rated.json")
    conversation = parse_document(document)

    result = export_conversation(conversation, "openwebui")

    assert result.document == document[0]
    assert result.omitted == []


def test_a_rebuilt_chat_reads_back_the_same_messages_files_and_ratings() -> None:
    document = load("colony_pcr_regenerated_and_rated.json")
    conversation = parse_document(document)
    for message in conversation.messages:
        message.raw = None

    result = export_conversation(conversation, "openwebui")
    again = parse_document(result.document)

    def view(c: Any) -> Any:
        return [(m.key, m.parent_key, m.role, m.parts, m.reasoning, m.created_at, m.extra) for m in c.messages]

    assert view(again) == view(conversation)
    assert [(f.message_key, f.score, f.comment, f.raw) for f in again.feedback] == [
        (f.message_key, f.score, f.comment, f.raw) for f in conversation.feedback
    ]
    question = result.document["chat"]["history"]["messages"]["1f0c6a52-3d8e-4b8f-9a61-2c7e5b0d9f13"]
    assert question["files"] == [{"type": "image", "url": conversation.messages[0].parts[1]["url"]}]
    assert result.omitted == []


def test_a_branch_added_after_import_is_listed_among_its_parents_children() -> None:
    document = load("minimal_single_item.json")
    conversation = parse_document(document)
    user, answer = conversation.messages
    conversation.messages.append(text_message("regen", "assistant", "Tris 242 g, acetic acid 57.1 mL.", user.key))
    conversation.active_leaf_key = "regen"

    exported = export_conversation(conversation, "openwebui").document

    messages = exported["chat"]["history"]["messages"]
    assert messages[user.key]["childrenIds"] == [answer.key, "regen"]
    assert messages["regen"]["parentId"] == user.key
    assert exported["chat"]["history"]["currentId"] == "regen"
    assert document["chat"]["history"]["messages"][user.key]["childrenIds"] == [answer.key]  # not changed


def test_what_open_webui_cannot_hold_is_noted_or_kept_elsewhere() -> None:
    conversation = tool_conversation(format="chat_graph")
    conversation.messages[0].hidden = True
    conversation.messages[1].author_metadata = {"channel": "web"}
    conversation.messages[1].context_pairs = [["page", "/records/3"]]
    conversation.messages[1].parts.insert(0, {"type": "image", "url": "https://example.org/gel.png"})
    conversation.messages[1].extra = {"annotation": "not a rating", "lab": "B2"}
    conversation.context_pairs = [["app", "notebook"]]

    result = export_conversation(conversation, "openwebui")

    message = result.document["chat"]["history"]["messages"]["m2"]
    assert message["context"] == [["page", "/records/3"]]
    assert message["lab"] == "B2" and "annotation" not in message
    assert result.omitted == [
        "message context pairs (kept in a message's `context` key)",
        "author metadata of 1 message",
        "hidden flags (hidden messages exported as visible)",
        "conversation context pairs",
        "the place of attachments among the text of 1 message(s) (they follow the text)",
        "message keys that clash with the format: annotation",
    ]


def test_the_chats_own_keys_stay_inside_the_chat_and_other_keys_at_the_top() -> None:
    document = load("colony_pcr_regenerated_and_rated.json")[0]
    conversation = parse_document(document)

    exported = export_conversation(conversation, "openwebui").document
    elsewhere = export_conversation(conversation, "chat_document").document

    assert exported["chat"]["params"] is document["chat"]["params"]
    assert (exported["pinned"], exported["meta"]) == (True, {"tags": ["pcr", "cloning"]})
    assert elsewhere["chat"] == conversation.metadata["chat"]  # another format keeps them under their key
    assert "history" not in elsewhere["chat"]


def test_a_stale_linear_copy_goes_back_as_received() -> None:
    document = load("minimal_single_item.json")
    stale: list[dict[str, Any]] = [copy.deepcopy(next(iter(document["chat"]["history"]["messages"].values())))]
    document["chat"]["messages"] = stale

    exported = export_conversation(parse_document(document), "openwebui").document

    assert exported["chat"]["messages"] == stale
    assert exported == document


def test_message_times_are_whole_seconds_unless_they_have_a_fraction() -> None:
    conversation = branched_conversation(format="openai")
    first = conversation.messages[0]
    assert first.created_at is not None
    conversation.messages[0] = Message(
        key=first.key, role=first.role, parts=first.parts, created_at=first.created_at.replace(microsecond=250000)
    )

    messages = export_conversation(conversation, "openwebui").document["chat"]["history"]["messages"]

    assert messages["m1"]["timestamp"] == 1625216400.25
    assert messages["m2a"]["timestamp"] == 1625216460 and isinstance(messages["m2a"]["timestamp"], int)


def test_reasoning_of_a_message_that_is_no_assistants_rides_as_reasoning_content() -> None:
    conversation = tool_conversation(format="openai")
    conversation.messages[3].reasoning = "The search returned one hit."  # the tool message

    result = export_conversation(conversation, "openwebui")
    again = parse_document(result.document)

    tool = result.document["chat"]["history"]["messages"]["m4"]
    assert tool["reasoning_content"] == "The search returned one hit."
    assert "<details" not in tool["content"]
    assert next(m for m in again.messages if m.key == "m4").reasoning == "The search returned one hit."
