"""The one integer parser: ASCII digits inside a range, nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chats.errors import InvalidInput
from chats.integers import parse_int, require_int


@pytest.mark.parametrize(
    "text", ["²", "①", "፩", "\uff11\uff12", " 12", "12 ", "1_000", "+1", "", "-", "1e3", "12\n", "0x1"]
)
def test_anything_but_ascii_digits_is_not_an_integer(text: str) -> None:
    assert parse_int(text) is None


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("42", 42), ("-7", -7), ("007", 7)])
def test_ascii_digits_are(text: str, value: int) -> None:
    assert parse_int(text) == value


def test_the_range_is_inclusive() -> None:
    assert parse_int("5", minimum=1, maximum=5) == 5
    assert parse_int("6", minimum=1, maximum=5) is None
    assert parse_int("0", minimum=1) is None


def test_a_number_too_long_for_a_bigint_is_refused_before_conversion() -> None:
    assert parse_int("9" * 19) is None
    assert parse_int("9" * 5000) is None


def test_booleans_are_not_integers() -> None:
    assert parse_int(True) is None


def test_require_int_names_the_parameter() -> None:
    with pytest.raises(InvalidInput) as raised:
        require_int("²", name="message", minimum=0)
    assert raised.value.errors[0]["path"] == "message"
    assert "at least 0" in raised.value.errors[0]["message"]


@given(st.text(max_size=8))
def test_never_raises_for_any_text(text: str) -> None:
    value = parse_int(text)
    assert value is None or (text.isascii() and text.strip() == text and int(text) == value)
