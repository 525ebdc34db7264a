"""A rubric's questions and the answers given to them, checked without the database.

A question is ``{"key", "prompt", "type", "target", ...}``:
- ``categorical``: ``options``, a list of distinct strings; the answer is one of them;
- ``multi_label``: ``options`` likewise; the answer is a list of distinct options (possibly empty);
- ``ordinal``: ``scale``, ``{"min": int, "max": int, "labels": {str(int): name}}`` (labels optional); the answer is
  an integer in [min, max];
- ``boolean``: the answer is true or false;
- ``text``: the answer is a string (a comment or a corrected answer).

``target`` is ``"conversation"`` (the answer is a value) or ``"role:<role>"`` (every message of that role on the
reviewed path: the answer is an object from message key to value). Errors are lists of ``{"path": JSON pointer,
"message": ...}``.

Two rules make versions trustworthy. `rubric_errors` is the one check of a rubric and `answers_errors` the one check
of answers (the API, the pages and the drafts all call them, through ``chats.services.review``); and
`normalized_questions` is the one canonical form of a rubric: what is stored, and what `same_questions` compares, so
that a rubric saved unchanged (from the edit page, or a PATCH that repeats it) never makes a new version.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from chats.integers import parse_int
from chats.storable import pointer_token, unstorable

QUESTION_TYPES = ("categorical", "multi_label", "ordinal", "boolean", "text")
OPTION_TYPES = ("categorical", "multi_label")
TARGET_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
QUESTION_FIELDS = ("key", "prompt", "type", "target", "options", "scale")
SCALE_FIELDS = ("min", "max", "labels")
MAX_QUESTIONS = 50
MAX_OPTIONS = 100
MAX_LINE = 2000  # a prompt, an option or a label: one line of text
MAX_TEXT = 20_000
MAX_DEPTH = 32  # a rubric or an answer is a few levels deep; deeper is refused at the storable boundary
MAX_SCALE = 1_000_000  # the ends of an ordinal scale, in absolute value
# fullmatch, never match with "$": "$" also matches before a trailing newline ("ok\n" would pass).
KEY_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,63}")

Error = dict[str, str]


def _error(path: str, message: str) -> Error:
    return {"path": path, "message": message}


def _pointer(token: object) -> str:
    return pointer_token(token)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _line_errors(text: object, path: str, what: str = "a non-empty string") -> list[Error]:
    """One line of text: a non-empty string (around its spaces), without line breaks or other control characters
    (the edit page gives each in a one-line field, and gives back exactly what it shows)."""
    if not isinstance(text, str) or not text.strip():
        return [_error(path, f"must be {what}")]
    if len(text) > MAX_LINE:
        return [_error(path, f"must be at most {MAX_LINE} characters")]
    if any(unicodedata.category(char) == "Cc" for char in text):
        return [_error(path, "must be one line, without line breaks or other control characters")]
    return []


def _options_errors(question: Mapping[str, object], path: str) -> list[Error]:
    options = question.get("options")
    if not isinstance(options, list) or not options:
        return [_error(f"{path}/options", "must be a non-empty list of strings")]
    if len(options) > MAX_OPTIONS:
        return [_error(f"{path}/options", f"at most {MAX_OPTIONS} options")]
    errors = [error for i, option in enumerate(options) for error in _line_errors(option, f"{path}/options/{i}")]
    if not errors and len({option.strip() for option in options}) != len(options):
        errors.append(_error(f"{path}/options", "options must be distinct"))
    return errors


def _scale_errors(question: Mapping[str, object], path: str) -> list[Error]:
    scale = question.get("scale")
    if not isinstance(scale, dict):
        return [_error(f"{path}/scale", 'must be an object {"min": int, "max": int}')]
    errors = [
        _error(f"{path}/scale/{_pointer(name)}", "is not a field of a scale (min, max, labels)")
        for name in scale
        if name not in SCALE_FIELDS
    ]
    low, high = parse_int(scale.get("min")), parse_int(scale.get("max"))
    if low is None or high is None or not _is_int(scale["min"]) or not _is_int(scale["max"]):
        return [*errors, _error(f"{path}/scale", "min and max must be integers")]
    if abs(low) > MAX_SCALE or abs(high) > MAX_SCALE:
        return [*errors, _error(f"{path}/scale", f"min and max must be integers from {-MAX_SCALE} to {MAX_SCALE}")]
    if not low < high or high - low > MAX_OPTIONS:
        return [*errors, _error(f"{path}/scale", f"min must be below max, at most {MAX_OPTIONS} apart")]
    labels = scale.get("labels", {})
    if not isinstance(labels, dict):
        return [*errors, _error(f"{path}/scale/labels", "must be an object from a point of the scale to its name")]
    seen: set[int] = set()
    for point, name in labels.items():
        where = f"{path}/scale/labels/{_pointer(point)}"
        number = parse_int(point, minimum=low, maximum=high)
        if number is None:
            errors.append(_error(where, f"must be a point of the scale in ASCII digits, from {low} to {high}"))
        elif number in seen:
            errors.append(_error(where, "names the same point as another label"))
        elif isinstance(name, str) and not name.strip():
            seen.add(number)  # a blank name is no label (normalized_questions drops it)
        else:
            seen.add(number)
            errors += _line_errors(name, where, "a string naming the point")
    return errors


def _target_errors(question: Mapping[str, object], path: str) -> list[Error]:
    target = question.get("target", "conversation")
    if target == "conversation":
        return []
    if isinstance(target, str) and target.startswith("role:") and target[5:] in TARGET_ROLES:
        return []
    roles = ", ".join(f"role:{role}" for role in TARGET_ROLES)
    return [_error(f"{path}/target", f"must be conversation or one of {roles}")]


def rubric_errors(questions: object) -> list[Error]:
    """What is wrong with a rubric's questions (an empty list when nothing is): at least one question, each with a
    key matching KEY_PATTERN whole, a one-line prompt, a known type and target, its options or scale, and no field
    the rubric does not know (the edit page could not give it back)."""
    found = unstorable(questions, "/questions", max_chars=MAX_TEXT, max_depth=MAX_DEPTH)
    if found is not None:
        return [found.as_error()]
    if not isinstance(questions, list):
        return [_error("/questions", "must be a list of questions")]
    if not questions:
        return [_error("/questions", "a rubric needs at least one question")]
    if len(questions) > MAX_QUESTIONS:
        return [_error("/questions", f"at most {MAX_QUESTIONS} questions")]
    errors: list[Error] = []
    seen: set[str] = set()
    for i, question in enumerate(questions):
        path = f"/questions/{i}"
        if not isinstance(question, dict):
            errors.append(_error(path, "must be an object"))
            continue
        errors += [
            _error(f"{path}/{_pointer(name)}", f"is not a field of a question ({', '.join(QUESTION_FIELDS)})")
            for name in question
            if name not in QUESTION_FIELDS
        ]
        key = question.get("key")
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            errors.append(
                _error(f"{path}/key", "must be 1 to 64 lowercase letters, digits and _, starting with a letter")
            )
        elif key in seen:
            errors.append(_error(f"{path}/key", f"{key!r} is used by an earlier question"))
        else:
            seen.add(key)
        errors += _line_errors(question.get("prompt"), f"{path}/prompt")
        kind = question.get("type")
        if kind not in QUESTION_TYPES:
            errors.append(_error(f"{path}/type", f"must be one of {', '.join(QUESTION_TYPES)}"))
        elif kind in OPTION_TYPES:
            errors += _options_errors(question, path)
        elif kind == "ordinal":
            errors += _scale_errors(question, path)
        errors += _target_errors(question, path)
    return errors


def normalized_question(question: Mapping[str, Any]) -> dict[str, Any]:
    """A question in its one canonical form: every field present (``target`` defaults to ``"conversation"``), text
    stripped of surrounding spaces, only the fields its type uses, and ordinal labels keyed by their point as
    canonical digits, in scale order, blank names left out. Two questions mean the same exactly when their
    normalized forms are equal. Takes a question `rubric_errors` accepts (or one stored before its rules grew)."""
    kind = question.get("type")
    result: dict[str, Any] = {
        "key": question.get("key"),
        "prompt": question["prompt"].strip() if isinstance(question.get("prompt"), str) else question.get("prompt"),
        "type": kind,
        "target": question.get("target") or "conversation",
    }
    if kind in OPTION_TYPES:
        options = question.get("options") or []
        result["options"] = [option.strip() if isinstance(option, str) else option for option in options]
    elif kind == "ordinal":
        scale = question.get("scale") or {}
        labels: dict[int, str] = {}
        for point, name in (scale.get("labels") or {}).items():
            number = parse_int(point)
            if number is not None and isinstance(name, str) and name.strip():
                labels.setdefault(number, name.strip())
        result["scale"] = {
            "min": scale.get("min"),
            "max": scale.get("max"),
            "labels": {str(point): labels[point] for point in sorted(labels)},
        }
    return result


def normalized_questions(questions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A rubric in its canonical form (`normalized_question` for each question, in order): what a version stores."""
    return [normalized_question(question) for question in questions]


def same_questions(first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]]) -> bool:
    """Whether two rubrics mean the same: the one comparison that decides whether a save makes a new version."""
    return normalized_questions(first) == normalized_questions(second)


def _value_errors(question: Mapping[str, Any], value: object, path: str) -> list[Error]:
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


def answers_errors(
    questions: list[dict[str, Any]],
    answers: object,
    *,
    complete: bool,
    message_keys: Mapping[str, str] | None = None,
) -> list[Error]:
    """What is wrong with `answers` (question key -> value) to a valid rubric: the one check of answers (reviews,
    drafts and resolutions, from the API and the pages). Storable first (no NUL, lone surrogate, depth beyond
    ``MAX_DEPTH`` or string beyond MAX_TEXT), then known questions only, each value of its question's
    type and range. `complete`: every question but the text ones must be answered (a submitted review, a
    resolution); a draft may leave any out.

    `message_keys` maps the key of each message on the reviewed path to its role: a question about the messages of
    a role may then name only those of that role. None skips that check (answers read back without their item)."""
    found = unstorable(answers, "/answers", max_chars=MAX_TEXT, max_depth=MAX_DEPTH)
    if found is not None:
        return [found.as_error()]
    if not isinstance(answers, dict):
        return [_error("/answers", "must be an object from question key to answer")]
    by_key = {question["key"]: question for question in questions}
    errors = [
        _error(f"/answers/{_pointer(key)}", "no such question in this rubric") for key in answers if key not in by_key
    ]
    for key, question in by_key.items():
        path = f"/answers/{_pointer(key)}"
        if key not in answers or answers[key] is None:
            if complete and question["type"] != "text":
                errors.append(_error(path, "is required"))
            continue
        value = answers[key]
        target = question.get("target") or "conversation"
        if target == "conversation":
            errors += _value_errors(question, value, path)
        elif not isinstance(value, dict):
            errors.append(_error(path, "must be an object from message key to answer"))
        else:
            role = target.removeprefix("role:")
            for message_key, each in value.items():
                where = f"{path}/{_pointer(message_key)}"
                if message_keys is not None and message_keys.get(message_key) != role:
                    errors.append(_error(where, f"no {role} message with this key on the reviewed path"))
                else:
                    errors += _value_errors(question, each, where)
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
