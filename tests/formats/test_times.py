"""Timestamps read from what the formats write: ISO 8601 with or without an offset, epoch seconds."""

from datetime import UTC, datetime

import pytest

from chats.formats.canonical import Issues
from chats.formats.times import parse_timestamp


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
