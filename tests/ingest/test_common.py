import pytest

from chats.formats.canonical import Issues
from chats.ingest.common import (
    context_pairs,
    extract_inline_reasoning,
    parents_first,
    parse_arguments,
    pointer,
    split_think,
)

# --- JSON pointers ---------------------------------------------------------------------------------------------


def test_pointer_appends_keys_and_indexes():
    assert pointer("/main_messages", 3, "tool_calls", 0) == "/main_messages/3/tool_calls/0"


def test_pointer_escapes_tilde_and_slash_in_keys():
    assert pointer("/mapping", "a/b~c") == "/mapping/a~1b~0c"


def test_pointer_from_the_document_root():
    assert pointer("", 2, "role") == "/2/role"


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
    assert parse_arguments('{"keywords": ["PCR"]}') == ({"keywords": ["PCR"]}, "", "")


@pytest.mark.parametrize("arguments", ["", "   "])
def test_empty_arguments_are_no_error(arguments):
    assert parse_arguments(arguments) == (None, "", "")


def test_invalid_json_arguments_give_the_decoder_message():
    parsed, error, warning = parse_arguments('{"sequences": ["GAAG"], "temperature_c": 60')
    assert parsed is None
    assert error.startswith("Expecting ',' delimiter")
    assert warning == f"arguments are not valid JSON: {error}"


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
