"""What a reader sees changed between two values: field by field, nested objects by dotted path, long texts by
line."""

from __future__ import annotations

from chats.diffs import MAX_DIFF_LINES, Change, field_changes, line_diff


def test_added_removed_and_changed_fields_are_told_apart() -> None:
    changes = field_changes({"score": 1, "comment": "ok", "gone": True}, {"score": -1, "comment": "ok", "new": [1]})
    assert [(c.path, c.change, c.old, c.new) for c in changes] == [
        ("gone", Change.REMOVED, True, None),
        ("new", Change.ADDED, None, [1]),
        ("score", Change.CHANGED, 1, -1),
    ]


def test_nested_objects_are_compared_key_by_key() -> None:
    changes = field_changes({"metadata": {"a": 1, "b": {"c": "x"}}}, {"metadata": {"a": 1, "b": {"c": "y"}}})
    assert [(c.path, c.old, c.new) for c in changes] == [("metadata.b.c", "x", "y")]


def test_a_value_of_another_type_is_a_change_even_when_python_calls_them_equal() -> None:
    assert [c.path for c in field_changes({"flag": 1}, {"flag": True})] == ["flag"]


def test_long_texts_are_diffed_by_line() -> None:
    old = "line one\nline two\nline three"
    new = "line one\nline 2\nline three"
    (change,) = field_changes({"correction": old}, {"correction": new})
    assert change.text_diff is not None
    assert [(line.sign, line.text) for line in change.text_diff.lines if line.sign in "+-"] == [
        ("-", "line two"),
        ("+", "line 2"),
    ]


def test_a_created_or_deleted_row_shows_every_field_added_or_removed() -> None:
    assert [c.change for c in field_changes(None, {"a": 1, "b": 2})] == [Change.ADDED, Change.ADDED]
    assert [c.change for c in field_changes({"a": 1}, None)] == [Change.REMOVED]
    assert [(c.path, c.old, c.new) for c in field_changes("draft", "done")] == [("value", "draft", "done")]


def test_nothing_changed_is_an_empty_diff() -> None:
    assert field_changes({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []


def test_a_line_diff_longer_than_the_cap_says_it_was_cut() -> None:
    old = [f"{i}" for i in range(MAX_DIFF_LINES + 10)]
    assert line_diff(old, old[:-1]).truncated
    assert not line_diff(old[:10], old[:9]).truncated
