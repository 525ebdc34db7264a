"""The storable-value boundary: what PostgreSQL can keep, with the pointer of what it cannot."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chats import storable
from chats.errors import InvalidInput


@pytest.mark.parametrize(
    ("value", "pointer", "reason"),
    [
        ("a\x00b", "", "NUL"),
        ({"a": ["ok", "\ud800"]}, "/a/1", "surrogate"),
        ({"a/b": {"c~d": "\x00"}}, "/a~1b/c~0d", "NUL"),
        ({"\x00": 1}, "/\\u0000", "key contains a NUL"),
        ({"\udc00": 1}, "/\\udc00", "key contains an unpaired"),
        ([[["x"]]], "/0/0", "nested more than 2"),
    ],
)
def test_names_the_pointer_of_the_first_unstorable_value(value: object, pointer: str, reason: str) -> None:
    found = storable.unstorable(value, max_depth=2) if "nested" in reason else storable.unstorable(value)
    assert found is not None
    assert found.pointer == pointer
    assert reason in found.reason
    found.pointer.encode()  # the pointer itself is storable


def test_the_first_offender_in_document_order_is_reported() -> None:
    found = storable.unstorable({"a": "\x00", "b": "\x00"})
    assert found is not None and found.pointer == "/a"


def test_a_value_nested_far_beyond_the_recursion_limit_is_refused_without_recursing() -> None:
    value: list[object] = []
    for _ in range(50_000):
        value = [value]
    found = storable.unstorable(value, "/answers")
    assert found is not None
    assert found.pointer.startswith("/answers/0/0")
    assert "nested more than" in found.reason


def test_long_text_is_refused_by_its_limit() -> None:
    assert storable.unstorable("x" * 11, max_chars=10) is not None
    assert storable.unstorable("x" * 10, max_chars=10) is None


def test_check_raises_invalid_input_under_the_field() -> None:
    with pytest.raises(InvalidInput) as raised:
        storable.check({"q": "a\x00"}, "/answers")
    assert raised.value.errors == [{"path": "/answers/q", "message": storable.text_reason("\x00")}]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('{"a": 1}', {"a": 1}),
        ('{"a": "\\u0000"}', None),
        ('{"a": "\\ud800"}', None),
        ("not json", None),
        ("NaN", None),
    ],
)
def test_json_inside_text_is_parsed_only_when_its_parsed_form_is_storable(text: str, parsed: object) -> None:
    assert storable.parsed_if_storable(text) == parsed
    assert storable.unstorable(text) is None  # the text itself stays storable


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_a_value_is_storable_exactly_when_every_string_encodes_and_holds_no_nul(value: object) -> None:
    def strings(item: object) -> list[str]:
        if isinstance(item, str):
            return [item]
        if isinstance(item, dict):
            return [s for key, child in item.items() for s in [key, *strings(child)]]
        if isinstance(item, list):
            return [s for child in item for s in strings(child)]
        return []

    expected = all(storable.text_reason(s) is None for s in strings(value))
    assert (storable.unstorable(value) is None) == expected
