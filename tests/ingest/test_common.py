from datetime import UTC, datetime

import pytest

from chats.ingest.common import (
    Issues,
    context_pairs,
    extract_inline_reasoning,
    parents_first,
    parse_arguments,
    parse_timestamp,
    pointer,
    split_think,
)
from chats.ingest.parts import content_parts, render_text

# --- JSON pointers ---------------------------------------------------------------------------------------------


def test_pointer_appends_keys_and_indexes():
    assert pointer("/main_messages", 3, "tool_calls", 0) == "/main_messages/3/tool_calls/0"


def test_pointer_escapes_tilde_and_slash_in_keys():
    assert pointer("/mapping", "a/b~c") == "/mapping/a~1b~0c"


def test_pointer_from_the_document_root():
    assert pointer("", 2, "role") == "/2/role"


# --- timestamps ------------------------------------------------------------------------------------------------


def test_iso_timestamp_with_offset_is_converted_to_utc():
    issues = Issues()
    moment = parse_timestamp("2024-05-06T09:12:03+08:00", "/start_time", issues)
    assert moment == datetime(2024, 5, 6, 1, 12, 3, tzinfo=UTC)
    assert moment is not None and moment.tzinfo is UTC
    assert issues.warnings == []


def test_iso_timestamp_with_z_suffix_is_utc():
    assert parse_timestamp("2024-05-08T10:45:12Z", "/t", Issues()) == datetime(2024, 5, 8, 10, 45, 12, tzinfo=UTC)


def test_naive_iso_timestamp_is_read_as_utc_with_a_warning():
    issues = Issues()
    moment = parse_timestamp("2024-05-07T14:00:00", "/start_time", issues)
    assert moment == datetime(2024, 5, 7, 14, 0, tzinfo=UTC)
    assert [warning.path for warning in issues.warnings] == ["/start_time"]
    assert "no UTC offset" in issues.warnings[0].message


def test_epoch_integer_timestamp():
    assert parse_timestamp(1625216400, "/t", Issues()) == datetime(2021, 7, 2, 9, 0, tzinfo=UTC)


def test_epoch_float_timestamp_keeps_fractions_of_a_second():
    assert parse_timestamp(1715580000.25, "/t", Issues()) == datetime(2024, 5, 13, 6, 0, 0, 250000, tzinfo=UTC)


@pytest.mark.parametrize("text", ["1625216400", " 1625216400.0 "])
def test_numeric_string_timestamp_is_epoch_seconds(text):
    assert parse_timestamp(text, "/t", Issues()) == datetime(2021, 7, 2, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("value", [None, ""])
def test_missing_timestamp_is_none_without_warning(value):
    issues = Issues()
    assert parse_timestamp(value, "/t", issues) is None
    assert issues.warnings == []


@pytest.mark.parametrize("value", ["yesterday", True, {"seconds": 1}, 10**20, float("nan")])
def test_bad_timestamp_gives_a_warning_and_none(value):
    issues = Issues()
    assert parse_timestamp(value, "/end_time", issues) is None
    assert [warning.path for warning in issues.warnings] == ["/end_time"]
    assert issues.errors == []


# --- content parts ---------------------------------------------------------------------------------------------


def parts_of(content):
    issues = Issues()
    parts = content_parts(content, "/0/content", issues)
    assert issues.errors == []
    return parts


def test_string_content_becomes_one_text_part():
    assert parts_of("Hello") == [{"type": "text", "text": "Hello"}]


def test_empty_string_and_null_content_have_no_parts():
    assert parts_of("") == []
    assert parts_of(None) == []


def test_text_part():
    assert parts_of([{"type": "text", "text": "Lane 3"}]) == [{"type": "text", "text": "Lane 3"}]


def test_image_url_as_bare_string_becomes_an_image_part():
    part = {"type": "image_url", "image_url": "https://example.com/gel.png"}
    assert parts_of([part]) == [{"type": "image", "url": "https://example.com/gel.png"}]


def test_image_url_object_keeps_url_and_detail():
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}}
    assert parts_of([part]) == [{"type": "image", "url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}]


def test_input_image_part_from_the_responses_api():
    part = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"}
    assert parts_of([part]) == [{"type": "image", "url": "https://example.com/a.png", "detail": "low"}]


def test_input_audio_part_keeps_data_and_format():
    part = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    assert parts_of([part]) == [{"type": "audio", "data": "UklGRg==", "format": "wav"}]


def test_audio_part_with_a_url():
    assert parts_of([{"type": "audio", "audio": {"url": "https://example.com/a.wav"}}]) == [
        {"type": "audio", "url": "https://example.com/a.wav"}
    ]


def test_file_part_keeps_only_the_fields_given():
    part = {"type": "file", "file": {"file_id": "file-123", "filename": "run.csv"}}
    assert parts_of([part]) == [{"type": "file", "file_id": "file-123", "filename": "run.csv"}]


def test_refusal_part():
    assert parts_of([{"type": "refusal", "refusal": "I can't help with that."}]) == [
        {"type": "refusal", "refusal": "I can't help with that."}
    ]


def test_parts_without_a_type_are_understood():
    parts = parts_of([{"text": "And this one?"}, {"image": "https://example.com/b.png"}, {"audio": "https://x/a.wav"}])
    assert parts == [
        {"type": "text", "text": "And this one?"},
        {"type": "image", "url": "https://example.com/b.png"},
        {"type": "audio", "url": "https://x/a.wav"},
    ]


def test_untyped_audio_without_a_scheme_is_base64_data():
    assert parts_of([{"audio": "UklGRiQAAABXQVZF"}]) == [{"type": "audio", "data": "UklGRiQAAABXQVZF"}]


def test_bare_string_inside_a_list_becomes_a_text_part():
    assert parts_of(["Bands look sharper."]) == [{"type": "text", "text": "Bands look sharper."}]


def test_unknown_part_is_kept_verbatim():
    part = {"type": "video_url", "video_url": {"url": "https://example.com/v.mp4"}}
    assert parts_of([part]) == [{"type": "unknown", "raw": part}]


def test_known_type_with_unusable_fields_is_kept_as_unknown():
    part = {"type": "image_url", "image_url": 42}
    assert parts_of([part]) == [{"type": "unknown", "raw": part}]


@pytest.mark.parametrize("bad_part", [55, None, ["nested"], True])
def test_part_that_is_neither_object_nor_string_is_an_error_at_its_path(bad_part):
    issues = Issues()
    content_parts([{"type": "text", "text": "ok"}, bad_part], "/main_messages/0/content", issues)
    assert [error.path for error in issues.errors] == ["/main_messages/0/content/1"]


@pytest.mark.parametrize("content", [12, {"type": "text", "text": "x"}, True])
def test_content_that_is_not_string_null_or_list_is_an_error(content):
    issues = Issues()
    content_parts(content, "/3/content", issues)
    assert [error.path for error in issues.errors] == ["/3/content"]


def test_text_rendering_joins_text_and_refusals_with_newlines():
    parts = [
        {"type": "text", "text": "First"},
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "refusal", "refusal": "Not that."},
        {"type": "text", "text": "Last"},
    ]
    assert render_text(parts) == "First\nNot that.\nLast"


# --- inline reasoning ------------------------------------------------------------------------------------------


def test_think_block_is_split_from_the_answer():
    assert split_think("<think>Tm is 58 °C.</think>\n\nAnneal at 55 °C.") == ("Anneal at 55 °C.", "Tm is 58 °C.")


def test_text_without_think_tags_is_unchanged():
    assert split_think("  Anneal at 55 °C. ") == ("  Anneal at 55 °C. ", "")


def test_closing_think_tag_without_an_opening_one():
    assert split_think("The template opened the tag.</think>Answer.") == ("Answer.", "The template opened the tag.")


def test_unclosed_think_tag_is_reasoning_cut_off():
    assert split_think("Answer so far.<think>still thinking") == ("Answer so far.", "still thinking")


def test_several_think_blocks_are_all_kept():
    assert split_think("<think>one</think>A<think>two</think>B") == ("AB", "one\n\ntwo")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Blocks first, then a closing tag left over (its reasoning goes first), then an opening one cut off.
        ("early</think>A<think>b</think>C", ("AC", "early\n\nb")),
        ("<think>a</think>B<think>cut off", ("B", "a\n\ncut off")),
        ("A<think>unclosed<think>again", ("A", "unclosed<think>again")),
        # A block ends at the first closing tag after its opening one.
        ("<think><think>x</think>y</think>z", ("z", "y\n\n<think>x")),
        # Removing a block can join the text around it into a tag, read like any other.
        ("</thi<think>x</think>nk>Answer", ("Answer", "x")),
        # Only the first leftover closing tag closes anything; empty reasoning is dropped.
        ("</think></think>x", ("</think>x", "")),
        ("<think>only</think>", ("", "only")),
    ],
)
def test_think_tags_in_every_arrangement(text, expected):
    assert split_think(text) == expected


def test_parts_that_held_only_reasoning_are_dropped():
    parts = [{"type": "text", "text": "<think>a</think>"}, {"type": "text", "text": "<think>b</think>Answer"}]
    assert extract_inline_reasoning(parts) == ([{"type": "text", "text": "Answer"}], "a\n\nb")


# --- arguments and context pairs -------------------------------------------------------------------------------


def test_valid_json_arguments_are_parsed():
    assert parse_arguments('{"keywords": ["PCR"]}') == ({"keywords": ["PCR"]}, "")


@pytest.mark.parametrize("arguments", ["", "   "])
def test_empty_arguments_are_no_error(arguments):
    assert parse_arguments(arguments) == (None, "")


def test_invalid_json_arguments_give_the_decoder_message():
    parsed, error = parse_arguments('{"sequences": ["GAAG"], "temperature_c": 60')
    assert parsed is None
    assert error.startswith("Expecting ',' delimiter")


def test_valid_context_pairs_are_returned_as_given():
    pairs = [["lab", "Cell Biology Core"], ["", ""]]
    assert context_pairs(pairs, "/context", Issues()) is pairs


@pytest.mark.parametrize(
    ("value", "warning_path"),
    [
        ({"lab": "core"}, "/context"),
        ([["ph", 7.9]], "/context/0"),
        ([["lab", "core"], ["one"]], "/context/1"),
    ],
)
def test_invalid_context_pairs_give_a_warning_and_none(value, warning_path):
    issues = Issues()
    assert context_pairs(value, "/context", issues) is None
    assert [warning.path for warning in issues.warnings] == [warning_path]


# --- trees -----------------------------------------------------------------------------------------------------


def test_parents_first_keeps_the_given_order_when_it_is_already_valid():
    assert parents_first({"a": None, "b": "a", "c": "a"}) == (["a", "b", "c"], [])


def test_parents_first_moves_a_child_after_its_late_parent():
    assert parents_first({"a": None, "c": "b", "b": "a"}) == (["a", "b", "c"], [])


def test_parents_first_reports_nodes_in_and_under_a_cycle():
    ordered, unplaced = parents_first({"a": None, "b": "c", "c": "b", "d": "c"})
    assert ordered == ["a"]
    assert unplaced == ["b", "c", "d"]
