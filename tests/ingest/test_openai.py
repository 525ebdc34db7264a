import pytest

from chats.formats.canonical import ParseError, chain_key, content_key
from chats.ingest import openai, parse_document
from tests.factories.documents import load_fixture


def parse_fixture(name):
    return parse_document(load_fixture(f"openai/{name}.json"))


def warnings_of(conversation):
    return [(warning.path, warning.message) for warning in conversation.warnings]


# --- the UATA pattern ------------------------------------------------------------------------------------------


def test_tool_call_pattern_parses_to_a_linear_chain():
    document = load_fixture("openai/pcr_nonspecific_bands_tool_call.json")
    conversation = parse_document(document)

    assert conversation.format == "openai"
    assert conversation.external_id is None
    assert [message.role for message in conversation.messages] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant"
    ]  # fmt: skip
    parent = None
    for message, raw in zip(conversation.messages, document, strict=True):
        assert message.parent_key == (parent.key if parent else None)
        assert message.content_key == content_key(parent.content_key if parent else None, message)
        assert message.key == chain_key(message.content_key)
        assert message.raw is raw
        parent = message
    assert conversation.warnings == []
    assert conversation.active_leaf_key is None


def test_tool_call_is_parsed_with_its_arguments_and_linked_to_its_result():
    conversation = parse_fixture("pcr_nonspecific_bands_tool_call")
    caller, result = conversation.messages[2], conversation.messages[3]

    [call] = caller.tool_calls
    assert call.call_id == "call_abc123"
    assert call.type == "function"
    assert call.name == "airalogy_search"
    assert (
        call.arguments
        == load_fixture("openai/pcr_nonspecific_bands_tool_call.json")[2]["tool_calls"][0]["function"]["arguments"]
    )
    assert call.parsed_arguments == {
        "keywords": ["PCR", "nonspecific bands", "primer dimer", "annealing temperature"],
        "top_k": 3,
    }
    assert call.arguments_error == ""
    assert call.index == 0
    assert caller.content_is_string and caller.parts == [] and caller.text == ""
    assert result.tool_call_id == "call_abc123"
    assert result.text.startswith('{"search_result"')


def test_source_paths_point_into_the_array():
    conversation = parse_fixture("pcr_nonspecific_bands_tool_call")
    assert [message.source_path for message in conversation.messages][:3] == ["/0", "/1", "/2"]


def test_same_history_gives_the_same_keys_and_a_longer_one_extends_them():
    document = load_fixture("openai/pcr_nonspecific_bands_tool_call.json")
    short = parse_document(document[:4])
    full = parse_document(document)
    assert [message.key for message in short.messages] == [message.key for message in full.messages[:4]]


# --- multimodal content ----------------------------------------------------------------------------------------


def test_multimodal_user_message_keeps_every_part_in_order():
    user = parse_fixture("gel_image_multimodal").messages[1]
    assert not user.content_is_string
    assert [part["type"] for part in user.parts] == ["text", "image", "image", "audio", "file"]
    assert user.parts[1] == {"type": "image", "url": "https://lab.example.org/gels/2024-05-02-gapdh.png"}
    assert user.parts[2]["detail"] == "high"
    assert user.parts[2]["url"].startswith("data:image/png;base64,")
    assert user.parts[3] == {
        "type": "audio",
        "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=",
        "format": "wav",
    }
    assert user.parts[4] == {
        "type": "file",
        "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL",
        "filename": "thermocycler_run_2024-05-02.csv",
    }
    assert user.text == user.parts[0]["text"]


def test_untyped_parts_bare_strings_and_unknown_parts_in_one_message():
    document = load_fixture("openai/gel_image_multimodal.json")
    user = parse_document(document).messages[3]
    assert user.parts == [
        {"type": "text", "text": "And this one, after I lowered MgCl2 to 1.5 mM?"},
        {"type": "image", "url": "https://lab.example.org/gels/2024-05-03-gapdh-mg15.png"},
        {"type": "audio", "url": "https://lab.example.org/voice/note-0503.wav"},
        {"type": "text", "text": "The bands look sharper to me."},
        {"type": "unknown", "raw": document[3]["content"][4]},
    ]
    assert user.text == "And this one, after I lowered MgCl2 to 1.5 mM?\nThe bands look sharper to me."


def test_inline_think_in_a_text_part_becomes_reasoning():
    document = load_fixture("openai/gel_image_multimodal.json")
    assistant = parse_document(document).messages[2]
    assert assistant.reasoning.startswith("Lane 6 is the NTC.")
    assert assistant.text.startswith("Lane 6 (no-template control) shows only a faint band")
    assert "<think>" not in assistant.text
    assert assistant.parts == [{"type": "text", "text": assistant.text}]
    assert assistant.raw["content"][0]["text"].startswith("<think>")


def test_file_part_with_inline_data():
    user = parse_fixture("gel_image_multimodal").messages[5]
    assert user.parts[1]["filename"] == "primer_sheet_GAPDH.pdf"
    assert user.parts[1]["file_data"].startswith("data:application/pdf;base64,")


# --- parallel calls and messy tool traffic ---------------------------------------------------------------------


def test_parallel_tool_calls_keep_their_order_and_index():
    caller = parse_fixture("parallel_calls_and_messy_tools").messages[2]
    assert caller.content_is_null
    assert not caller.content_is_string
    assert [(call.index, call.call_id, call.name) for call in caller.tool_calls] == [
        (0, "call_tm_fwd", "calculate_primer_tm"),
        (1, "call_tm_rev", "calculate_primer_tm"),
        (2, "call_hairpin", "predict_secondary_structure"),
    ]


def test_arguments_beside_function_are_read():
    call = parse_fixture("parallel_calls_and_messy_tools").messages[2].tool_calls[1]
    assert call.parsed_arguments == {"sequence": "TTGAGGTCAATGAAGGGGTC", "na_mM": 50, "primer_nM": 200}
    assert call.extra == {}


def test_invalid_json_arguments_are_kept_with_the_error_and_a_warning():
    conversation = parse_fixture("parallel_calls_and_messy_tools")
    call = conversation.messages[2].tool_calls[2]
    assert call.arguments.endswith('"temperature_c": 60')
    assert call.parsed_arguments is None
    assert call.arguments_error.startswith("Expecting ',' delimiter")
    assert ("/2/tool_calls/2", f"arguments are not valid JSON: {call.arguments_error}") in warnings_of(conversation)


def test_results_arriving_in_another_order_than_the_calls_are_linked_by_id():
    messages = parse_fixture("parallel_calls_and_messy_tools").messages
    assert [message.tool_call_id for message in messages[3:6]] == ["call_tm_rev", "call_tm_fwd", "call_hairpin"]


def test_call_without_id_gets_a_synthetic_id_and_a_warning():
    conversation = parse_fixture("parallel_calls_and_messy_tools")
    call = conversation.messages[9].tool_calls[1]
    assert call.call_id == "call_4"  # the fifth call of the conversation
    assert call.name == "list_freezer_inventory"
    assert call.arguments == ""
    assert call.parsed_arguments is None and call.arguments_error == ""
    assert ("/9/tool_calls/1", "tool call has no id; using 'call_4'") in warnings_of(conversation)


def test_custom_tool_call_keeps_its_input_as_free_text():
    call = parse_fixture("parallel_calls_and_messy_tools").messages[9].tool_calls[2]
    assert call.type == "custom"
    assert call.name == "lab_notebook_append"
    assert call.arguments.startswith("2024-05-03: Tm check done")
    assert call.parsed_arguments is None
    assert call.arguments_error == ""


def test_messy_tool_traffic_gives_exactly_the_expected_warnings():
    assert warnings_of(parse_fixture("parallel_calls_and_messy_tools")) == [
        ("/2/tool_calls/2", "arguments are not valid JSON: Expecting ',' delimiter: line 1 column 84 (char 83)"),
        ("/9/tool_calls/1", "tool call has no id; using 'call_4'"),
        ("/8", "out of order: the result of 'call_lot_lookup' comes before its call"),
        ("/11", "orphan result: tool_call_id 'call_freezer_7' matches no call"),
        ("/9/tool_calls/1", "unanswered call: no result for 'call_4'"),
    ]


def test_out_of_order_and_orphan_results_are_kept():
    messages = parse_fixture("parallel_calls_and_messy_tools").messages
    assert messages[8].tool_call_id == "call_lot_lookup"
    assert messages[11].tool_call_id == "call_freezer_7"
    assert messages[11].role == "tool"


def test_tool_message_without_tool_call_id_is_an_orphan():
    conversation = openai.parse(
        [
            {"role": "user", "content": "Run it"},
            {"role": "tool", "content": "done"},
        ]
    )
    assert warnings_of(conversation) == [("/1", "orphan result: tool message without a tool_call_id")]


def test_tool_message_content_may_be_a_list_of_text_parts():
    conversation = openai.parse(
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": '{"ok":'}, "true}"]},
        ]
    )
    assert conversation.messages[1].text == '{"ok":\ntrue}'
    assert conversation.messages[0].tool_calls[0].type == "function"
    assert conversation.warnings == []


def test_non_string_arguments_are_stored_as_json_text_with_a_warning():
    conversation = openai.parse(
        [
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"n": 1}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1"},
        ]
    )
    call = conversation.messages[0].tool_calls[0]
    assert call.arguments == '{"n": 1}'
    assert call.parsed_arguments == {"n": 1}
    assert warnings_of(conversation) == [("/0/tool_calls/0", "arguments are not a string; stored as their JSON text")]


def test_unknown_keys_of_a_tool_call_are_kept_in_its_extra():
    conversation = openai.parse(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "index": 0, "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        ]
    )
    assert conversation.messages[0].tool_calls[0].extra == {"index": 0}


def test_duplicate_call_ids_give_a_warning():
    conversation = openai.parse(
        [
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
        ]
    )
    assert warnings_of(conversation) == [
        ("/2/tool_calls/0", "tool call id 'c1' is used twice (first at /0/tool_calls/0)")
    ]


# --- legacy function calls -------------------------------------------------------------------------------------


def test_legacy_function_call_is_answered_by_the_function_message_of_that_name():
    conversation = parse_fixture("legacy_function_call")
    caller, result = conversation.messages[2], conversation.messages[3]
    [call] = caller.tool_calls
    assert call.type == "function_call"
    assert call.call_id == f"function_call:{caller.key}"
    assert call.name == "calculate_mass"
    assert call.parsed_arguments == {"molar_mass_g_per_mol": 58.44, "concentration_M": 0.15, "volume_L": 0.5}
    assert result.role == "function"
    assert result.name == "calculate_mass"
    assert result.tool_call_id == call.call_id
    assert conversation.warnings == []


def test_function_message_without_an_open_call_is_an_orphan():
    conversation = openai.parse([{"role": "function", "name": "calculate_mass", "content": "{}"}])
    assert warnings_of(conversation) == [
        ("/0", "orphan result: function message 'calculate_mass' answers no open function_call")
    ]


def test_unanswered_legacy_function_call_is_flagged():
    conversation = openai.parse([{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}])
    [warning] = conversation.warnings
    assert warning.path == "/0/function_call"
    assert warning.message.startswith("unanswered call")


# --- reasoning, refusals, names, unknown keys ------------------------------------------------------------------


def test_reasoning_content_is_kept_apart_from_the_answer():
    assistant = parse_fixture("reasoning_refusal_and_extras").messages[2]
    assert assistant.reasoning.startswith("The lower Tm is 58.2 °C.")
    assert assistant.text.startswith("Start at 55 °C")


def test_inline_think_in_string_content_becomes_reasoning_and_the_raw_keeps_it():
    assistant = parse_fixture("reasoning_refusal_and_extras").messages[4]
    assert (
        assistant.reasoning
        == "A gradient should bracket the estimate: from about 52 °C to 62 °C. Eight wells on most cyclers."
    )
    assert assistant.text.startswith("Run a gradient from 52 °C to 62 °C")
    assert assistant.content_is_string
    assert assistant.raw["content"].startswith("<think>")


def test_think_tags_in_a_user_message_are_left_alone():
    conversation = openai.parse([{"role": "user", "content": "What does <think>x</think> mean in Qwen output?"}])
    assert conversation.messages[0].text == "What does <think>x</think> mean in Qwen output?"
    assert conversation.messages[0].reasoning == ""


def test_refusal_key_becomes_a_refusal_part():
    assistant = parse_fixture("reasoning_refusal_and_extras").messages[6]
    assert assistant.content_is_null
    assert assistant.parts == [
        {"type": "refusal", "refusal": "I can't help with increasing the transmissibility of a pathogen."}
    ]
    assert assistant.text == "I can't help with increasing the transmissibility of a pathogen."


def test_refusal_part_in_content_is_rendered_in_the_text():
    assistant = parse_fixture("reasoning_refusal_and_extras").messages[8]
    assert [part["type"] for part in assistant.parts] == ["text", "refusal"]
    assert assistant.text.endswith("\nI don't have current vendor prices, so I left them out.")


def test_roles_and_names_are_kept_as_given():
    messages = parse_fixture("reasoning_refusal_and_extras").messages
    assert messages[0].role == "developer"
    assert messages[1].name == "dr_lin"
    conversation = openai.parse([{"role": "critic", "content": "Looks fine."}])
    assert conversation.messages[0].role == "critic"


def test_unknown_message_keys_are_kept_verbatim_in_extra():
    messages = parse_fixture("reasoning_refusal_and_extras").messages
    assert messages[1].extra == {"message_id": "msg_01HXW3K8Q2", "files": [], "created_at": "2024-05-08T02:14:09Z"}
    assert messages[2].extra == {"channel": "final", "parent_id": "msg_01HXW3K8Q2"}


def test_a_non_string_name_is_kept_in_extra_with_a_warning():
    conversation = openai.parse([{"role": "user", "name": 7, "content": "Hi"}])
    assert conversation.messages[0].name == ""
    assert conversation.messages[0].extra == {"name": 7}
    assert warnings_of(conversation) == [("/0/name", "name is not a string; kept in extra")]


# --- parse_messages as a building block ------------------------------------------------------------------------


def test_parse_messages_uses_the_given_path_and_section():
    messages, warnings = openai.parse_messages(
        [{"role": "user", "content": "Hi"}], path="/scenario_messages", section="scenario"
    )
    [message] = messages
    assert message.section == "scenario"
    assert message.parent_key is None
    assert message.key == chain_key(content_key(None, message))
    assert message.source_path == "/scenario_messages/0"
    assert warnings == []


# --- errors ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "path", "message"),
    [
        ([{"content": "Hi"}], "/0/role", "a message needs a role (a non-empty string)"),
        ([{"role": 3, "content": "Hi"}], "/0/role", "a message needs a role (a non-empty string)"),
        ([{"role": "", "content": "Hi"}], "/0/role", "a message needs a role (a non-empty string)"),
        (["user: Hi"], "/0", "a message must be an object"),
        ([{"role": "assistant", "tool_calls": {"id": "c1"}}], "/0/tool_calls", "tool_calls must be a list"),
        ([{"role": "assistant", "tool_calls": ["f()"]}], "/0/tool_calls/0", "a tool call must be an object"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}],
            "/0/tool_calls/0",
            "a tool call needs a function name",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "function": "f"}]}],
            "/0/tool_calls/0/function",
            "function must be an object",
        ),
        ([{"role": "assistant", "function_call": "f()"}], "/0/function_call", "function_call must be an object"),
        (
            [{"role": "assistant", "function_call": {"arguments": "{}"}}],
            "/0/function_call",
            "a function_call needs a name",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "a"}, 3]}],
            "/0/content/1",
            "a content part must be an object or a string",
        ),
        ([], "", "the conversation has no messages"),
    ],
)
def test_each_error_is_reported_at_its_json_path(messages, path, message):
    with pytest.raises(ParseError) as caught:
        openai.parse(messages)
    assert [error.as_dict() for error in caught.value.errors] == [{"path": path, "message": message}]


def test_every_error_of_a_document_is_reported_at_once():
    with pytest.raises(ParseError) as caught:
        openai.parse([{"content": "a"}, {"role": "user", "content": 5}, "x"])
    assert [error.path for error in caught.value.errors] == ["/0/role", "/1/content", "/2"]
