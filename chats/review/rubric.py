"""A rubric's questions and the answers given to them, checked without the database.

A question is ``{"key", "prompt", "type", "target", ...}``:
- ``categorical``: ``options``, a list of distinct strings; the answer is one of them;
- ``multi_label``: ``options`` likewise; the answer is a list of distinct options (possibly empty);
- ``ordinal``: ``scale``, ``{"min": int, "max": int, "labels": {str(int): name}}`` (labels optional); the answer is
  an integer in [min, max];
- ``boolean``: the answer is true or false;
- ``text``: the answer is a string (a comment or a corrected answer).

``target`` is ``"conversation"`` (the answer is a value) or ``"role:<role>"`` (every message of that role: the answer
is an object from message key to value). Errors are lists of ``{"path": JSON pointer, "message": ...}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

QUESTION_TYPES = ("categorical", "multi_label", "ordinal", "boolean", "text")
TARGET_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
MAX_QUESTIONS = 50
MAX_OPTIONS = 100
MAX_TEXT = 20_000
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

Error = dict[str, str]


def _error(path: str, message: str) -> Error:
    return {"path": path, "message": message}


def _pointer(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _options_errors(question: Mapping[str, Any], path: str) -> list[Error]:
    options = question.get("options")
    if not isinstance(options, list) or not options:
        return [_error(f"{path}/options", "must be a non-empty list of strings")]
    if len(options) > MAX_OPTIONS:
        return [_error(f"{path}/options", f"at most {MAX_OPTIONS} options")]
    errors = [
        _error(f"{path}/options/{i}", "must be a non-empty string")
        for i, option in enumerate(options)
        if not isinstance(option, str) or not option.strip()
    ]
    if not errors and len(set(options)) != len(options):
        errors.append(_error(f"{path}/options", "options must be distinct"))
    return errors


def _scale_errors(question: Mapping[str, Any], path: str) -> list[Error]:
    scale = question.get("scale")
    if not isinstance(scale, dict):
        return [_error(f"{path}/scale", 'must be an object {"min": int, "max": int}')]
    if not _is_int(scale.get("min")) or not _is_int(scale.get("max")):
        return [_error(f"{path}/scale", "min and max must be integers")]
    low, high = int(scale["min"]), int(scale["max"])
    if not low < high or high - low > MAX_OPTIONS:
        return [_error(f"{path}/scale", f"min must be below max, at most {MAX_OPTIONS} apart")]
    labels = scale.get("labels", {})
    if not isinstance(labels, dict):
        return [_error(f"{path}/scale/labels", "must be an object from a point of the scale to its name")]
    return [
        _error(f"{path}/scale/labels/{_pointer(point)}", "must name a point of the scale with a string")
        for point, name in labels.items()
        if not isinstance(name, str) or not point.lstrip("-").isdigit() or not low <= int(point) <= high
    ]


def _target_errors(question: Mapping[str, Any], path: str) -> list[Error]:
    target = question.get("target", "conversation")
    if target == "conversation":
        return []
    if isinstance(target, str) and target.startswith("role:") and target[5:] in TARGET_ROLES:
        return []
    roles = ", ".join(f"role:{role}" for role in TARGET_ROLES)
    return [_error(f"{path}/target", f"must be conversation or one of {roles}")]


def rubric_errors(questions: Any) -> list[Error]:
    """What is wrong with a rubric's questions (an empty list when nothing is)."""
    if not isinstance(questions, list):
        return [_error("/questions", "must be a list of questions")]
    if len(questions) > MAX_QUESTIONS:
        return [_error("/questions", f"at most {MAX_QUESTIONS} questions")]
    errors: list[Error] = []
    seen: set[str] = set()
    for i, question in enumerate(questions):
        path = f"/questions/{i}"
        if not isinstance(question, dict):
            errors.append(_error(path, "must be an object"))
            continue
        key = question.get("key")
        if not isinstance(key, str) or not KEY_PATTERN.match(key):
            errors.append(_error(f"{path}/key", "must be lowercase letters, digits and _, starting with a letter"))
        elif key in seen:
            errors.append(_error(f"{path}/key", f"{key!r} is used by an earlier question"))
        else:
            seen.add(key)
        prompt = question.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            errors.append(_error(f"{path}/prompt", "must be a non-empty string"))
        kind = question.get("type")
        if kind not in QUESTION_TYPES:
            errors.append(_error(f"{path}/type", f"must be one of {', '.join(QUESTION_TYPES)}"))
        elif kind in ("categorical", "multi_label"):
            errors += _options_errors(question, path)
        elif kind == "ordinal":
            errors += _scale_errors(question, path)
        errors += _target_errors(question, path)
    return errors


def _value_errors(question: Mapping[str, Any], value: Any, path: str) -> list[Error]:
    kind = question["type"]
    if kind == "categorical":
        if value not in question["options"]:
            return [_error(path, f"must be one of {', '.join(question['options'])}")]
    elif kind == "multi_label":
        if not isinstance(value, list) or any(label not in question["options"] for label in value):
            return [_error(path, f"must be a list of labels among {', '.join(question['options'])}")]
        if len(set(value)) != len(value):
            return [_error(path, "labels must be distinct")]
    elif kind == "ordinal":
        low, high = question["scale"]["min"], question["scale"]["max"]
        if not _is_int(value) or not low <= value <= high:
            return [_error(path, f"must be an integer from {low} to {high}")]
    elif kind == "boolean":
        if not isinstance(value, bool):
            return [_error(path, "must be true or false")]
    elif not isinstance(value, str) or len(value) > MAX_TEXT:
        return [_error(path, f"must be a string of at most {MAX_TEXT} characters")]
    return []


def answers_errors(questions: list[dict[str, Any]], answers: Any, *, complete: bool) -> list[Error]:
    """What is wrong with `answers` (question key -> value) to a valid rubric. `complete`: every question but the
    text ones must be answered (a submitted review, a resolution); a draft may leave any out."""
    if not isinstance(answers, dict):
        return [_error("/answers", "must be an object from question key to answer")]
    by_key = {question["key"]: question for question in questions}
    errors = [
        _error(f"/answers/{_pointer(key)}", "no such question in this rubric") for key in answers if key not in by_key
    ]
    for key, question in by_key.items():
        path = f"/answers/{key}"
        if key not in answers or answers[key] is None:
            if complete and question["type"] != "text":
                errors.append(_error(path, "is required"))
            continue
        value = answers[key]
        if question.get("target", "conversation") == "conversation":
            errors += _value_errors(question, value, path)
        elif not isinstance(value, dict):
            errors.append(_error(path, "must be an object from message key to answer"))
        else:
            for message_key, each in value.items():
                errors += _value_errors(question, each, f"{path}/{_pointer(message_key)}")
    return errors


ORDINAL_TOLERANCE = 1  # ordinal answers further apart than this are a disagreement


def _disagree(kind: str, values: list[Any]) -> bool:
    if kind == "text" or len(values) < 2:
        return False
    if kind == "ordinal":
        numbers = [value for value in values if _is_int(value)]
        return bool(numbers) and max(numbers) - min(numbers) > ORDINAL_TOLERANCE
    if kind == "multi_label":
        return len({frozenset(value) for value in values if isinstance(value, list)}) > 1
    return len({repr(value) for value in values}) > 1


def disagreements(questions: list[dict[str, Any]], answer_sets: list[Mapping[str, Any]]) -> list[str]:
    """The keys of the questions that reviewers answered differently (text questions never): different values
    of a categorical, boolean or multi-label question, or ordinal answers more than ORDINAL_TOLERANCE apart; for
    a question about messages, on any one message."""
    keys = []
    for question in questions:
        key, kind = question["key"], question["type"]
        given = [answers[key] for answers in answer_sets if answers.get(key) is not None]
        if question.get("target", "conversation") == "conversation":
            found = _disagree(kind, given)
        else:
            per_message: dict[str, list[Any]] = {}
            for value in given:
                if isinstance(value, dict):
                    for message_key, each in value.items():
                        per_message.setdefault(message_key, []).append(each)
            found = any(_disagree(kind, values) for values in per_message.values())
        if found:
            keys.append(key)
    return keys


def _most_common(values: list[Any]) -> Any:
    counts: dict[str, int] = {}
    first: dict[str, Any] = {}
    for value in values:
        token = repr(sorted(value) if isinstance(value, list) else value)
        counts[token] = counts.get(token, 0) + 1
        first.setdefault(token, value)
    return first[max(counts, key=lambda token: counts[token])] if counts else None


def consensus(questions: list[dict[str, Any]], answer_sets: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The answer most reviewers gave to each question (the earliest of equally common ones; per message for a
    question about messages), as a starting point for a lead's resolution."""
    result: dict[str, Any] = {}
    for question in questions:
        key = question["key"]
        given = [answers[key] for answers in answer_sets if answers.get(key) is not None]
        if question.get("target", "conversation") == "conversation":
            value = _most_common(given)
            if value is not None:
                result[key] = value
            continue
        per_message: dict[str, list[Any]] = {}
        for value in given:
            if isinstance(value, dict):
                for message_key, each in value.items():
                    per_message.setdefault(message_key, []).append(each)
        if per_message:
            result[key] = {message_key: _most_common(values) for message_key, values in per_message.items()}
    return result
