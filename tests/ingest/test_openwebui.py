import copy
import time
from datetime import UTC, datetime

import pytest

from chats.formats import openwebui as openwebui_format
from chats.formats.canonical import FEEDBACK_ORIGIN_OPENWEBUI, ParseError
from chats.ingest import detect_format, openwebui, parse_document
from tests.factories.documents import load_fixture

# Message ids of chats/demo/documents/openwebui/colony_pcr_regenerated_and_rated.json
GEL_QUESTION = "1f0c6a52-3d8e-4b8f-9a61-2c7e5b0d9f13"
FIRST_ANSWER = "7b2e9c40-51a6-4e0d-8f3b-6a9d1c2e4b57"
REGENERATED_ANSWER = "c4d81f2a-9e63-47b5-a0c8-3f5e7d9b1a26"
Q5_QUESTION = "e92a5b17-0c4d-4f68-b3e1-8d7a6c5f2e90"
Q5_ANSWER = "5a7f3e81-b2c9-4d06-9e4a-1f8b0c7d6e35"
PCR_CHAT = "3c9e1a7b-52f4-4d8e-a6b0-8e2f4c1d7a95"
MESSAGES = "/0/chat/history/messages"


@pytest.fixture(scope="module")
def document():
    return load_fixture("openwebui/colony_pcr_regenerated_and_rated.json")


@pytest.fixture(scope="module")
def conversation(document):
    return parse_document(document)


@pytest.fixture(scope="module")
def by_key(conversation):
    return {message.key: message for message in conversation.messages}


def item(*messages, current_id=None, **top_level):
    """A one-chat Open WebUI item; each message is (id, parentId, role, content) or a full message object."""
    history = {}
    for message in messages:
        if isinstance(message, tuple):
            message_id, parent, role, content = message
            message = {"id": message_id, "parentId": parent, "childrenIds": [], "role": role, "content": content}
        history[message["id"]] = message
    chat = {"models": ["qwen3:8b"], "history": {"messages": history, "currentId": current_id}}
    return {"id": "chat-1", "title": "t", "chat": chat, **top_level}


# --- the fixture --------------------------------------------------------------------------------------------


def test_conversation_fields(conversation):
    assert conversation.format == "openwebui"
    assert conversation.external_id == PCR_CHAT
    assert conversation.title == "🧬 Colony PCR gel and Q5 annealing"
    assert conversation.user_id == "0d5b8f2e-6a1c-4e93-b7d4-2f9c8a1e5b63"
    assert (conversation.model_name, conversation.model) == ("qwen3:32b", "qwen3:32b")
    assert conversation.started_at == datetime(2025, 5, 12, 9, 31, 51, tzinfo=UTC)
    assert conversation.ended_at == datetime(2025, 5, 12, 9, 34, 35, tzinfo=UTC)
    assert conversation.original_times == {"created_at": 1747042311, "updated_at": 1747042475}
    assert conversation.active_leaf_key == Q5_ANSWER
    assert conversation.warnings == []


def test_other_top_level_keys_and_the_chats_own_keys_are_kept_verbatim(conversation, document):
    chat = document[0]["chat"]
    assert set(conversation.metadata) == {"share_id", "archived", "pinned", "meta", "folder_id", "chat"}
    assert conversation.metadata["meta"] is document[0]["meta"]
    assert conversation.metadata["chat"] == {
        key: chat[key] for key in ("id", "title", "models", "params", "tags", "timestamp", "files")
    }
    assert conversation.metadata["chat"]["params"] is chat["params"]


def test_the_linear_messages_copy_of_the_active_branch_is_not_kept(conversation, document):
    assert [message["id"] for message in document[0]["chat"]["messages"]] == [
        GEL_QUESTION, REGENERATED_ANSWER, Q5_QUESTION, Q5_ANSWER
    ]  # fmt: skip
    assert "messages" not in conversation.metadata["chat"]


def test_a_linear_copy_that_is_not_the_active_branch_is_kept_verbatim():
    document = item(("u", None, "user", "Hi"), ("a", "u", "assistant", "Hello"), current_id="a")
    stale = [{"id": "u", "role": "user", "content": "Hi"}]
    document["chat"]["messages"] = stale

    assert openwebui.parse(document).metadata["chat"]["messages"] is stale


def test_parents_come_first_and_the_regeneration_is_a_branch(conversation, by_key):
    assert [message.key for message in conversation.messages] == [
        GEL_QUESTION, FIRST_ANSWER, REGENERATED_ANSWER, Q5_QUESTION, Q5_ANSWER
    ]  # fmt: skip
    assert by_key[FIRST_ANSWER].parent_key == by_key[REGENERATED_ANSWER].parent_key == GEL_QUESTION
    assert by_key[Q5_QUESTION].parent_key == REGENERATED_ANSWER
    assert by_key[GEL_QUESTION].parent_key is None


def test_each_message_keeps_its_id_its_raw_object_and_its_place(by_key, document):
    question = by_key[GEL_QUESTION]
    assert question.input_id == GEL_QUESTION
    assert question.raw is document[0]["chat"]["history"]["messages"][GEL_QUESTION]
    assert question.source_path == f"{MESSAGES}/{GEL_QUESTION}"
    assert question.created_at == datetime(2025, 5, 12, 9, 31, 55, tzinfo=UTC)
    assert question.content_is_string


def test_an_image_in_files_becomes_an_image_part_after_the_text(by_key):
    question = by_key[GEL_QUESTION]
    assert [part["type"] for part in question.parts] == ["text", "image"]
    assert question.parts[1]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert question.text.startswith("Colony PCR of 6 colonies")
    assert "files" not in question.extra


def test_reasoning_details_are_taken_apart_from_the_answer(by_key):
    answer = by_key[REGENERATED_ANSWER]
    assert answer.reasoning == (
        "Lane 6 was described as a colony, but a band of the same size in every lane would suggest contamination.\n"
        "Only lanes 3 and 4 have a single band between the 1,000 and 1,500 bp ladder bands.\n"
        "\n"
        "Lane 5 is faint; call it unclear rather than positive."
    )
    assert answer.text.startswith("Lanes **3** and **4** look positive")
    assert "<details" not in answer.text and "Thought for" not in answer.text


def test_unknown_message_keys_stay_in_extra(by_key):
    answer = by_key[Q5_ANSWER]
    assert set(answer.extra) == {"model", "modelName", "modelIdx", "userContext", "done", "usage", "followUps"}
    assert by_key[GEL_QUESTION].extra == {"models": ["qwen3:32b"]}


def test_thumbs_ratings_become_feedback_on_their_message(conversation, document):
    messages = document[0]["chat"]["history"]["messages"]
    assert [(item.message_key, item.score, item.comment) for item in conversation.feedback] == [
        (FIRST_ANSWER, -1, "Lane 6 is the empty-vector control; it must not be called positive."),
        (REGENERATED_ANSWER, 1, "Accurate information"),  # no comment: the reason picked
    ]
    assert {item.origin for item in conversation.feedback} == {FEEDBACK_ORIGIN_OPENWEBUI}
    assert conversation.feedback[0].raw is messages[FIRST_ANSWER]["annotation"]
    assert conversation.feedback_origins == [FEEDBACK_ORIGIN_OPENWEBUI]


def test_a_rated_annotation_is_feedback_not_an_extra(by_key):
    assert "annotation" not in by_key[FIRST_ANSWER].extra
    assert "annotation" in by_key[FIRST_ANSWER].raw


def test_the_minimal_item_parses_on_its_own():
    conversation = parse_document(load_fixture("openwebui/minimal_single_item.json"))

    assert (conversation.external_id, conversation.model_name) == (
        "f1a8c3e6-7b2d-4f95-8e0a-4c6d1b9e3a72",
        "llama3.1:8b",
    )
    assert [(m.role, m.parent_key is None) for m in conversation.messages] == [("user", True), ("assistant", False)]
    assert conversation.messages[1].reasoning == ""
    assert conversation.metadata == {"chat": {"title": "TAE buffer recipe", "models": ["llama3.1:8b"]}}
    assert conversation.feedback == [] and conversation.warnings == []


# --- detection and whole exports ----------------------------------------------------------------------------


def test_an_export_array_is_detected_as_openwebui_not_as_openai_messages(document):
    assert detect_format(document) == "openwebui"
    assert detect_format(document[0]) == "openwebui"


def test_a_whole_export_of_several_chats_cannot_be_parsed_as_one(document):
    minimal = load_fixture("openwebui/minimal_single_item.json")
    export = [document[0], minimal]

    assert detect_format(export) == "openwebui"
    with pytest.raises(ParseError) as caught:
        parse_document(export)
    assert caught.value.errors[0].message == "this Open WebUI export holds 2 chats: import it in bulk"


def test_a_bare_item_has_paths_from_the_root_and_an_array_of_one_under_0(document):
    bare = openwebui.parse(document[0])
    assert bare.messages[0].source_path == f"/chat/history/messages/{GEL_QUESTION}"
    document_with_error = copy.deepcopy(document)
    del document_with_error[0]["chat"]["history"]["messages"][Q5_ANSWER]["role"]
    with pytest.raises(ParseError) as caught:
        parse_document(document_with_error)
    assert [error.as_dict() for error in caught.value.errors] == [
        {"path": f"{MESSAGES}/{Q5_ANSWER}/role", "message": "a message needs a role (a non-empty string)"}
    ]


@pytest.mark.parametrize(
    "document",
    [{"chat": {"history": {"messages": []}}}, {"chat": {"messages": []}}, {"history": {"messages": {}}}, []],
)
def test_named_openwebui_says_what_it_expects(document):
    with pytest.raises(ParseError) as caught:
        parse_document(document, format="openwebui")
    assert caught.value.errors[0].message == f"format 'openwebui' expects {openwebui.EXPECTS}"


# --- reasoning ----------------------------------------------------------------------------------------------


def test_html_escaped_reasoning_of_newer_versions_is_unescaped():
    text = (
        '<details type="reasoning" done="true" duration="2">\n<summary>Thought for 2 seconds</summary>\n'
        "&gt; Tris &amp; EDTA: &lt;1 mM EDTA.\n&gt; &gt; a quoted line\n</details>\nUse 1x TE."
    )
    assert openwebui_format.split_reasoning(text) == ("Use 1x TE.", "Tris & EDTA: <1 mM EDTA.\n> a quoted line")


def test_a_reasoning_block_cut_off_runs_to_the_end():
    text = '<details type="reasoning" done="false">\n<summary>Thinking…</summary>\n> Still thinking\n'
    assert openwebui_format.split_reasoning(text) == ("", "Still thinking")


def test_several_blocks_join_and_other_details_stay_in_the_answer():
    tool_block = (
        '<details type="tool_calls" done="true" id="c1" name="search">\n<summary>Tool Executed</summary>\n</details>\n'
    )
    text = (
        f"{openwebui_format.quote_reasoning('first')}{tool_block}"
        '<details type="reasoning" done="true" duration="1">\n<summary>Thought for 1 seconds</summary>\n> second\n</details>\n'
        "Done."
    )
    answer, reasoning = openwebui_format.split_reasoning(text)
    assert (answer, reasoning) == (tool_block + "Done.", "first\n\nsecond")


def test_a_closing_tag_inside_a_quoted_line_does_not_end_the_block():
    text = openwebui_format.quote_reasoning("wrap it in </details> tags\n\nthen stop") + "Answer"
    assert openwebui_format.split_reasoning(text) == ("Answer", "wrap it in </details> tags\n\nthen stop")


@pytest.mark.parametrize(
    "reasoning", ["one line", "two\nlines", "> starts with a quote", "\nblank first and last\n", "ends with a space "]
)
def test_reasoning_quoted_by_the_exporter_reads_back_exactly(reasoning):
    assert openwebui_format.split_reasoning(openwebui_format.quote_reasoning(reasoning) + "Answer.") == (
        "Answer.",
        reasoning,
    )


@pytest.mark.parametrize(
    "text",
    [
        '<details type="reasoning">x</details>' * 50_000,  # closing tags without a newline before them
        '<details type="reasoning">' * 50_000,  # never closed
        '<details type="reasoning" ' * 50_000,  # an opening tag never ended
        '<details type="reasoning">\n> x\n</details>\n' * 50_000,
    ],
    ids=["plain-closes", "unclosed", "unended-tags", "well-formed"],
)
def test_reasoning_is_split_in_linear_time(text):
    started = time.perf_counter()
    openwebui_format.split_reasoning(text)
    # Megabytes: a scan from each of 50,000 blocks to the end would take minutes.
    assert time.perf_counter() - started < 2


def test_reasoning_details_in_a_user_message_are_its_text():
    text = openwebui_format.quote_reasoning("not mine") + "Why does Open WebUI write this?"
    conversation = openwebui.parse(item(("u", None, "user", text)))
    assert (conversation.messages[0].text, conversation.messages[0].reasoning) == (text, "")


# --- tree links and the active leaf -------------------------------------------------------------------------


def test_without_a_current_id_the_latest_leaf_is_active():
    messages = [
        {"id": "u", "parentId": None, "role": "user", "content": "Hi", "timestamp": 10},
        {"id": "late", "parentId": "u", "role": "assistant", "content": "B", "timestamp": 30},
        {"id": "early", "parentId": "u", "role": "assistant", "content": "A", "timestamp": 20},
    ]
    assert openwebui.parse(item(*messages)).active_leaf_key == "late"


def test_a_current_id_that_is_no_message_is_a_warning_and_the_latest_leaf_is_active():
    conversation = openwebui.parse(item(("u", None, "user", "Hi"), ("a", "u", "assistant", "B"), current_id="gone"))
    assert conversation.active_leaf_key == "a"
    assert [(w.path, w.message) for w in conversation.warnings] == [
        ("/chat/history/currentId", "currentId 'gone' is not a message; the latest leaf is used")
    ]


def test_an_unknown_parent_is_a_warning_and_the_message_a_root():
    conversation = openwebui.parse(item(("u", "deleted", "user", "Hi"), current_id="u"))
    assert conversation.messages[0].parent_key is None
    assert [(w.path, w.message) for w in conversation.warnings] == [
        ("/chat/history/messages/u/parentId", "parent 'deleted' is not a message; treated as a root")
    ]


def test_a_message_id_that_differs_from_its_key_is_a_warning_and_the_key_is_used():
    message = {"id": "other", "parentId": None, "role": "user", "content": "Hi"}
    conversation = openwebui.parse({"chat": {"history": {"messages": {"a/b": message}}}})
    assert conversation.messages[0].key == "a/b"
    assert [w.path for w in conversation.warnings] == ["/chat/history/messages/a~1b/id"]


def test_bad_messages_are_errors_at_their_paths():
    document = item(("u", None, "user", "Hi"), current_id="u")
    messages = document["chat"]["history"]["messages"]
    messages["n"] = "not an object"
    messages["p"] = {"role": "user", "parentId": 7, "content": "x"}
    messages["c"] = {"role": "user", "content": 3}
    messages[""] = {"role": "user", "content": "x"}
    with pytest.raises(ParseError) as caught:
        openwebui.parse(document)
    assert [(error.path, error.message) for error in caught.value.errors] == [
        ("/chat/history/messages/n", "a message must be an object"),
        ("/chat/history/messages/p/parentId", "parentId must be a message id or null"),
        ("/chat/history/messages/c/content", "content must be a string, null or a list of parts"),
        ("/chat/history/messages/", "a message id must be a non-empty string"),
    ]


def test_an_empty_history_is_an_error():
    with pytest.raises(ParseError) as caught:
        openwebui.parse({"chat": {"history": {"messages": {}}}})
    assert [error.path for error in caught.value.errors] == ["/chat/history/messages"]


# --- ratings ------------------------------------------------------------------------------------------------


def rated(annotation):
    return {"id": "a", "parentId": None, "role": "assistant", "content": "x", "annotation": annotation}


def test_an_annotation_without_thumbs_is_no_rating_and_stays_in_extra():
    annotation = {"tags": ["bands"], "details": {"rating": 7}}
    conversation = openwebui.parse(item(rated(annotation)))
    assert conversation.feedback == []
    assert conversation.messages[0].extra["annotation"] is annotation
    assert conversation.warnings == []


def test_a_comment_without_thumbs_is_feedback_without_a_score():
    conversation = openwebui.parse(item(rated({"comment": "Cite the protocol."})))
    assert [(f.score, f.comment) for f in conversation.feedback] == [(None, "Cite the protocol.")]


@pytest.mark.parametrize("rating", [5, True, "1", 0.5])
def test_a_rating_that_is_not_a_thumb_is_a_warning_and_kept_in_extra(rating):
    conversation = openwebui.parse(item(rated({"rating": rating})))
    assert conversation.feedback == []
    assert conversation.messages[0].extra["annotation"] == {"rating": rating}
    assert [w.path for w in conversation.warnings] == ["/chat/history/messages/a/annotation/rating"]


# --- files, OpenAI-style keys and top-level values ----------------------------------------------------------


def test_files_become_parts_and_unknown_entries_are_kept_whole():
    collection = {"type": "collection", "id": "kb1", "name": "Protocols"}
    message = {
        "id": "u",
        "parentId": None,
        "role": "user",
        "content": "See attached.",
        "files": [
            {"type": "file", "id": "f1", "name": "run.csv", "url": "/api/v1/files/f1", "size": 812},
            collection,
            "not an object",
        ],
    }
    conversation = openwebui.parse(item(message))
    assert conversation.messages[0].parts == [
        {"type": "text", "text": "See attached."},
        {"type": "file", "file_id": "f1", "filename": "run.csv"},
        {"type": "unknown", "raw": collection},
        {"type": "unknown", "raw": "not an object"},
    ]
    assert [w.path for w in conversation.warnings] == ["/chat/history/messages/u/files/2"]


def test_files_that_are_not_a_list_are_a_warning_and_kept_in_extra():
    message = {"id": "u", "parentId": None, "role": "user", "content": "x", "files": {"type": "image"}}
    conversation = openwebui.parse(item(message))
    assert conversation.messages[0].extra["files"] == {"type": "image"}
    assert [w.path for w in conversation.warnings] == ["/chat/history/messages/u/files"]


def test_openai_style_keys_are_read_and_ones_that_cannot_be_are_warnings():
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    conversation = openwebui.parse(
        item(
            {"id": "a", "parentId": None, "role": "assistant", "content": "", "tool_calls": [call]},
            {"id": "t", "parentId": "a", "role": "tool", "content": "42", "tool_call_id": "call_1"},
            {"id": "b", "parentId": "t", "role": "assistant", "content": "", "tool_calls": "oops"},
        )
    )
    by_key = {m.key: m for m in conversation.messages}
    assert [(c.call_id, c.name) for c in by_key["a"].tool_calls] == [("call_1", "search")]
    assert by_key["t"].tool_call_id == "call_1"
    assert [(w.path, w.message) for w in conversation.warnings] == [
        ("/chat/history/messages/b/tool_calls", "tool_calls must be a list; ignored")
    ]


def test_top_level_values_that_are_not_text_or_times_are_warnings_and_kept_in_metadata():
    conversation = openwebui.parse(
        item(("u", None, "user", "Hi"), title={"en": "Hi"}, user_id=42, created_at="yesterday")
    )
    assert (conversation.title, conversation.user_id, conversation.started_at) == ("", "42", None)
    assert conversation.metadata["title"] == {"en": "Hi"}
    assert conversation.metadata["created_at"] == "yesterday"
    assert [w.path for w in conversation.warnings] == ["/title", "/created_at"]


def test_the_chat_title_is_used_only_when_the_item_has_none():
    document = item(("u", None, "user", "Hi"))
    del document["title"]
    document["chat"]["title"] = "From the chat"
    assert openwebui.parse(document).title == "From the chat"
    document["title"] = "From the item"
    assert openwebui.parse(document).title == "From the item"


def test_a_conversation_id_that_is_not_text_is_an_error():
    with pytest.raises(ParseError) as caught:
        openwebui.parse(item(("u", None, "user", "Hi"), id={"x": 1}))
    assert [error.path for error in caught.value.errors] == ["/id"]
