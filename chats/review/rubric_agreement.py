"""Agreement per question of a queue's rubric, pooled over the rubric versions in which a question is the same
question (its canonical form, ``chats.review.rubric.normalized_question``), from the queue's submitted reviews.
Pure Python: the figures themselves are ``chats.review.agreement.question_agreement``'s."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chats.review.agreement import MIN_ITEMS, Key, QuestionAgreement, QuestionKind, question_agreement
from chats.review.rubric import normalized_question

__all__ = ["QuestionGroup", "rubric_agreement"]


@dataclass(frozen=True)
class QuestionGroup:
    """Agreement on one question as it stood in `versions` (the rubric versions in which its canonical form,
    `question`, is the same), over the answers given under those versions only. `current`: the current version is
    one of them."""

    key: str
    prompt: str
    versions: list[int]
    current: bool
    question: dict[str, Any]
    figure: QuestionAgreement

    @property
    def name(self) -> str:
        """How pages name it: the key, and the versions when they are not the current ones."""
        if self.current:
            return self.key
        shown = ", ".join(f"v{version}" for version in self.versions)
        return f"{self.key} ({shown})"


def _question_domain(question: Mapping[str, Any]) -> list[Any] | None:
    if question["type"] == "ordinal":
        scale = question["scale"]
        return list(range(int(scale["min"]), int(scale["max"]) + 1))
    if question["type"] in ("categorical", "multi_label"):
        return list(question["options"])
    return None


def rubric_agreement(
    versions: Mapping[int, Sequence[Mapping[str, Any]]],
    reviews: Iterable[tuple[Key, Key, int, Any]],
    *,
    current: int,
    min_items: int = MIN_ITEMS,
) -> list[QuestionGroup]:
    """Agreement per question of a queue, from its rubric `versions` (number -> questions) and its submitted
    `reviews` as ``(item, reviewer, version, answers)``. An answer is compared only with answers to the same
    question: the same canonical form (`normalized_question`), given under any of the versions where the question
    has that form. A question about the messages of a role counts each (item, message) as a unit. Free-text
    questions have none.

    The current version's questions come first, in its order, then the older forms by key, newest first. An answer
    that does not fit its question's type is left out; nothing here raises on what the database holds."""
    form_of: dict[tuple[int, str], str] = {}  # (version, key) -> its question's canonical form, as JSON
    groups: dict[str, tuple[dict[str, Any], list[int]]] = {}
    order: dict[str, tuple[int, int, str, int]] = {}
    for version in sorted(versions):
        for position, question in enumerate(versions[version]):
            if not isinstance(question, Mapping) or question.get("type") not in {kind.value for kind in QuestionKind}:
                continue
            canonical = normalized_question(question)
            signature = json.dumps(canonical, sort_keys=True)
            form_of[(version, str(canonical["key"]))] = signature
            groups.setdefault(signature, (canonical, []))[1].append(version)
            rank = (0, position, "", 0) if version == current else (1, 0, str(canonical["key"]), -version)
            order[signature] = min(order.get(signature, rank), rank)
    tables: dict[str, dict[tuple[Key, str], dict[Key, Any]]] = {signature: {} for signature in groups}
    for item, reviewer, version, answers in reviews:
        if not isinstance(answers, Mapping):
            continue
        for key, value in answers.items():
            form = form_of.get((version, key))
            if form is None:
                continue
            about_messages = groups[form][0]["target"] != "conversation"
            per_unit = value if about_messages else {"": value}
            if not isinstance(per_unit, Mapping):
                continue
            for unit, answer in per_unit.items():
                tables[form].setdefault((item, str(unit)), {})[reviewer] = answer
    result = []
    for signature in sorted(groups, key=lambda each: order[each]):
        question, used = groups[signature]
        figure = question_agreement(
            question["type"], tables[signature], options=_question_domain(question), min_items=min_items
        )
        result.append(
            QuestionGroup(
                key=str(question["key"]),
                prompt=str(question.get("prompt") or ""),
                versions=used,
                current=current in used,
                question=question,
                figure=figure,
            )
        )
    return result
