"""Rubrics and answers, checked without the database (chats/review/rubric.py): every error names the JSON path of
what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from chats.review.rubric import answers_errors, rubric_errors
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
