"""Rubrics and answers, checked without the database (chats/review/rubric.py): every error names the JSON path of
what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from chats.review.rubric import answers_errors, normalized_questions, rubric_errors, same_questions
from tests.factories.review import ANSWERS, QUESTIONS


def test_a_rubric_with_one_question_of_each_type_is_valid() -> None:
    assert rubric_errors(QUESTIONS) == []


@pytest.mark.parametrize(
    ("questions", "expected"),
    [
        ({"key": "x"}, ["/questions"]),
        ([{"key": "Bad Key", "prompt": "p", "type": "boolean"}], ["/questions/0/key"]),
        ([{"key": "a", "prompt": "", "type": "boolean"}], ["/questions/0/prompt"]),
        ([{"key": "a", "prompt": "p", "type": "likert"}], ["/questions/0/type"]),
        ([{"key": "a", "prompt": "p", "type": "categorical", "options": []}], ["/questions/0/options"]),
        ([{"key": "a", "prompt": "p", "type": "categorical", "options": ["x", 3]}], ["/questions/0/options/1"]),
        ([{"key": "a", "prompt": "p", "type": "multi_label", "options": ["x", "x"]}], ["/questions/0/options"]),
        ([{"key": "a", "prompt": "p", "type": "ordinal", "scale": {"min": 5, "max": 1}}], ["/questions/0/scale"]),
        (
            [{"key": "a", "prompt": "p", "type": "ordinal", "scale": {"min": 1, "max": 5, "labels": {"9": "x"}}}],
            ["/questions/0/scale/labels/9"],
        ),
        ([{"key": "a", "prompt": "p", "type": "boolean", "target": "role:robot"}], ["/questions/0/target"]),
        (
            [{"key": "a", "prompt": "p", "type": "text"}, {"key": "a", "prompt": "q", "type": "text"}],
            ["/questions/1/key"],
        ),
    ],
)
def test_a_rubrics_errors_name_the_json_path_of_what_is_wrong(questions: Any, expected: list[str]) -> None:
    assert [e["path"] for e in rubric_errors(questions)] == expected


def test_answers_are_checked_against_the_rubric_with_paths() -> None:
    assert answers_errors(QUESTIONS, ANSWERS, complete=True) == []
    wrong = {
        "correct": "maybe",
        "issues": ["hallucination", "typo"],
        "quality": {"m3": 9, "a/b": 3},
        "tools_ok": "yes",
        "extra": 1,
    }
    errors = answers_errors(QUESTIONS, wrong, complete=True)
    assert sorted(e["path"] for e in errors) == [
        "/answers/correct",
        "/answers/extra",
        "/answers/issues",
        "/answers/quality/m3",
        "/answers/tools_ok",
    ]
    # A draft may leave questions out; a submission must answer all but the text ones.
    assert answers_errors(QUESTIONS, {"correct": "wrong"}, complete=False) == []
    missing = answers_errors(QUESTIONS, {"correct": "wrong"}, complete=True)
    assert [e["path"] for e in missing] == ["/answers/issues", "/answers/quality", "/answers/tools_ok"]
    # Message keys are escaped as JSON pointer tokens.
    escaped = answers_errors(QUESTIONS, {**ANSWERS, "quality": {"a/b~": 0}}, complete=True)
    assert [e["path"] for e in escaped] == ["/answers/quality/a~1b~0"]


# --- The one validator: storable values, strict keys, ASCII integer points, the messages of the reviewed path


@pytest.mark.parametrize(
    ("questions", "expected"),
    [
        ([], "/questions"),  # a rubric needs at least one question
        ([{"key": "ok\n", "prompt": "p", "type": "boolean"}], "/questions/0/key"),  # "$" would accept it
        ([{"key": "a", "prompt": "p\x00", "type": "boolean"}], "/questions/0/prompt"),
        ([{"key": "a", "prompt": "p\ud800", "type": "boolean"}], "/questions/0/prompt"),
        ([{"key": "a", "prompt": "p", "type": "categorical", "options": ["x", "y\x00"]}], "/questions/0/options/1"),
        ([{"key": "a", "prompt": "two\nlines", "type": "boolean"}], "/questions/0/prompt"),
        ([{"key": "a", "prompt": "p", "type": "categorical", "options": ["x", "y\tz"]}], "/questions/0/options/1"),
        (
            [{"key": "a", "prompt": "p", "type": "ordinal", "scale": {"min": 1, "max": 5, "labels": {"²": "x"}}}],
            "/questions/0/scale/labels/²",
        ),
        (
            [{"key": "a", "prompt": "p", "type": "ordinal", "scale": {"min": 1, "max": 5, "labels": {"\uff13": "x"}}}],
            "/questions/0/scale/labels/\uff13",
        ),
        (
            [{"key": "a", "prompt": "p", "type": "ordinal", "scale": {"min": 1, "max": 5, "labels": {"1": 3}}}],
            "/questions/0/scale/labels/1",
        ),
        (
            [
                {
                    "key": "a",
                    "prompt": "p",
                    "type": "ordinal",
                    "scale": {"min": 1, "max": 5, "labels": {"1": "a", "01": "b"}},
                }
            ],
            "/questions/0/scale/labels/01",
        ),
        ([{"key": "a", "prompt": "p", "type": "boolean", "help": "x"}], "/questions/0/help"),
        ([{"key": "a", "prompt": "p", "type": "categorical", "options": ["x", " x"]}], "/questions/0/options"),
    ],
)
def test_the_rubric_check_refuses_what_could_not_be_stored_or_given_back(questions: Any, expected: str) -> None:
    assert [e["path"] for e in rubric_errors(questions)] == [expected]


def test_a_rubric_nested_too_deep_is_refused_naming_where() -> None:
    deep: Any = "x"
    for _ in range(150):
        deep = [deep]
    errors = rubric_errors([{"key": "a", "prompt": "p", "type": "categorical", "options": deep}])
    assert len(errors) == 1 and errors[0]["path"].startswith("/questions/0/options/0")
    assert "nested" in errors[0]["message"]


def test_the_canonical_form_fills_defaults_and_ignores_spelling() -> None:
    stored: list[dict[str, Any]] = [
        {"key": "ok", "prompt": "OK?", "type": "boolean"},
        {
            "key": "grade",
            "prompt": "Grade",
            "type": "ordinal",
            "scale": {"min": 1, "max": 5, "labels": {"5": "great", "1": "bad", "3": "ok"}},
        },
        {"key": "pick", "prompt": "Pick", "type": "categorical", "options": ["yes, mostly", "no"]},
    ]
    same: list[dict[str, Any]] = [
        {"key": "ok", "prompt": " OK? ", "type": "boolean", "target": "conversation"},
        {
            "key": "grade",
            "prompt": "Grade",
            "type": "ordinal",
            "target": "conversation",
            "scale": {"min": 1, "max": 5, "labels": {"1": "bad", "3": "ok", "5": "great", "4": "  "}},
        },
        {
            "key": "pick",
            "prompt": "Pick",
            "type": "categorical",
            "options": ["yes, mostly ", "no"],
            "target": "conversation",
        },
    ]
    assert same_questions(stored, same)
    assert normalized_questions(stored)[0] == {
        "key": "ok",
        "prompt": "OK?",
        "type": "boolean",
        "target": "conversation",
    }
    assert list(normalized_questions(stored)[1]["scale"]["labels"]) == ["1", "3", "5"]
    # What a question means: a label, an option, their order, the target.
    dropped_label = [
        stored[0],
        {**stored[1], "scale": {"min": 1, "max": 5, "labels": {"1": "bad", "5": "great"}}},
        stored[2],
    ]
    split_option = [stored[0], stored[1], {**stored[2], "options": ["yes", "mostly", "no"]}]
    reordered = [stored[0], stored[1], {**stored[2], "options": ["no", "yes, mostly"]}]
    retargeted = [{**stored[0], "target": "role:assistant"}, stored[1], stored[2]]
    for changed in (dropped_label, split_option, reordered, retargeted):
        assert not same_questions(stored, changed)


def test_answers_that_cannot_be_stored_are_refused_naming_the_field() -> None:
    assert [e["path"] for e in answers_errors(QUESTIONS, {**ANSWERS, "note": "a\x00b"}, complete=True)] == [
        "/answers/note"
    ]
    assert [e["path"] for e in answers_errors(QUESTIONS, {**ANSWERS, "note": "\udc00"}, complete=True)] == [
        "/answers/note"
    ]
    deep: Any = 1
    for _ in range(500):
        deep = {"x": deep}
    (error,) = answers_errors(QUESTIONS, {**ANSWERS, "note": deep}, complete=True)
    assert error["path"].startswith("/answers/note/x") and "nested" in error["message"]
    (error,) = answers_errors(QUESTIONS, {**ANSWERS, "note": "x" * 20_001}, complete=True)
    assert error["path"] == "/answers/note"


def test_answers_about_messages_may_name_only_the_reviewed_paths_messages_of_the_role() -> None:
    path = {"m1": "user", "m2": "assistant", "m4": "assistant"}
    good = {**ANSWERS, "quality": {"m2": 3, "m4": 5}}
    assert answers_errors(QUESTIONS, good, complete=True, message_keys=path) == []
    bad = {**ANSWERS, "quality": {"no-such-message": 2, "<script>": 3, "m1": 4, "m2": 9}}
    errors = answers_errors(QUESTIONS, bad, complete=True, message_keys=path)
    assert sorted(e["path"] for e in errors) == [
        "/answers/quality/<script>",
        "/answers/quality/m1",  # on the path, but a user message
        "/answers/quality/m2",  # an assistant message, out of the scale
        "/answers/quality/no-such-message",
    ]
