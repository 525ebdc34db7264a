"""Agreement between reviewers on one rubric question (design/review.md, section Agreement), over plain data.

Pure functions, no ORM and no Django: the caller reads submitted reviews into a table ``{item: {reviewer: value}}``
(``None`` or an absent reviewer is "not answered") and gets back, per question:

- Krippendorff's alpha (the ``krippendorff`` package): nominal for categorical and boolean questions, ordinal for
  ordinal scales (the scale's full value domain is passed when it is known), and for ordinal scales also the
  interval alpha (distances are the differences of the scale's points, squared); for multi-label questions, alpha
  per label, each label being a yes/no question for every reviewer who answered;
- for each pair of reviewers, Cohen's kappa (scikit-learn's ``cohen_kappa_score``) and the percent agreement over
  the items both answered (for multi-label, an answer is its whole set of labels: agreement is an exact match);
  for ordinal scales also the weighted kappas, linear and quadratic;
- the counts each figure rests on, and ``meaningful = False`` for a figure over fewer than ``min_items`` items.

A figure that is undefined (one reviewer, no overlap, no variation, no answers) is ``None`` with a reason, never an
exception, and so is an answer of the wrong type for its question (it is left out, as unanswered).

``chats.review.rubric_agreement`` does this for a queue: answers are compared only with answers to the same
question, where the same question means the same canonical form (``chats.review.rubric.normalized_question``: key,
prompt, type, target, options or scale). The rubric versions in which a question is identical are pooled, and each
figure lists them; a question that changed (a new type, other options, another scale) starts a new figure, and the
answers given before the change stay with the old one. ``chats.review.agreement_chart`` draws the figures.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

__all__ = [
    "MIN_ITEMS",
    "LabelAgreement",
    "PairAgreement",
    "QuestionAgreement",
    "QuestionKind",
    "question_agreement",
]

# Item, reviewer and label keys are whatever the caller uses (ids, usernames, UUIDs): hashable, and Any to mypy
# because Mapping keys are invariant (a dict[int, ...] is no Mapping[Hashable, ...]).
Key = Any

# An answer as the figures read it: compared, counted and coded, so hashable (after ``_clean``: a category, a scale's
# point, a boolean, or a multi-label answer's frozenset of labels).
Answer = Hashable

#: Below this many items a figure is shown but marked as not meaningful (design/review.md).
MIN_ITEMS = 10

# Reasons an undefined figure gives (stable strings: pages and the API show them).
NO_ANSWERS = "no answers"
ONE_REVIEWER = "only one reviewer answered"
NO_OVERLAP = "no item was answered by two reviewers"
PAIR_NO_OVERLAP = "the two reviewers answered no item in common"
NO_VARIATION = "every answer is the same: agreement beyond chance is undefined without variation"
MULTI_LABEL_ALPHA = "multi-label questions have an alpha per label"


class QuestionKind(enum.StrEnum):
    """The rubric question types agreement is computed for (free text is not)."""

    CATEGORICAL = "categorical"
    MULTI_LABEL = "multi_label"
    ORDINAL = "ordinal"
    BOOLEAN = "boolean"

    @property
    def level_of_measurement(self) -> str:
        """The distance Krippendorff's alpha uses for this kind."""
        return "ordinal" if self is QuestionKind.ORDINAL else "nominal"


@dataclass(frozen=True)
class PairAgreement:
    """Two reviewers (in sorted order) over the items both answered."""

    reviewers: tuple[Key, Key]
    n_items: int
    kappa: float | None
    percent_agreement: float | None
    meaningful: bool
    reason: str | None = None
    # Ordinal questions only (None otherwise, and when kappa is undefined): Cohen's kappa weighted by the distance
    # between the scale's points, linearly and squared.
    kappa_linear: float | None = None
    kappa_quadratic: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "reviewers": list(self.reviewers),
            "n_items": self.n_items,
            "kappa": self.kappa,
            "kappa_linear": self.kappa_linear,
            "kappa_quadratic": self.kappa_quadratic,
            "percent_agreement": self.percent_agreement,
            "meaningful": self.meaningful,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class LabelAgreement:
    """One label of a multi-label question, as a yes/no question for every reviewer who answered the question."""

    label: Key
    alpha: float | None
    alpha_reason: str | None
    n_items: int
    n_answers: int
    meaningful: bool
    pairs: list[PairAgreement] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "alpha": self.alpha,
            "alpha_reason": self.alpha_reason,
            "n_items": self.n_items,
            "n_answers": self.n_answers,
            "meaningful": self.meaningful,
            "pairs": [pair.as_dict() for pair in self.pairs],
        }


@dataclass(frozen=True)
class QuestionAgreement:
    """Agreement on one question.

    ``n_items`` counts the pairable items (answered by at least two reviewers), ``n_answers`` every answer given
    (pairable or not), ``n_reviewers`` the reviewers with at least one answer. ``alpha`` is ``None`` with
    ``alpha_reason`` when undefined, and always for multi-label questions (see ``per_label``)."""

    kind: QuestionKind
    level_of_measurement: str
    alpha: float | None
    alpha_reason: str | None
    n_items: int
    n_answers: int
    n_reviewers: int
    meaningful: bool
    pairs: list[PairAgreement]
    per_label: dict[Key, LabelAgreement] = field(default_factory=dict)
    # Ordinal questions only: alpha with the interval distance (None otherwise, or when alpha is undefined).
    alpha_interval: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (labels as given; the API turns keys into strings)."""
        return {
            "kind": str(self.kind),
            "level_of_measurement": self.level_of_measurement,
            "alpha": self.alpha,
            "alpha_reason": self.alpha_reason,
            "alpha_interval": self.alpha_interval,
            "n_items": self.n_items,
            "n_answers": self.n_answers,
            "n_reviewers": self.n_reviewers,
            "meaningful": self.meaningful,
            "pairs": [pair.as_dict() for pair in self.pairs],
            "per_label": [label.as_dict() for label in self.per_label.values()],
        }


# --------------------------------------------------------------------------------------------------------------
# Computation


def question_agreement(
    kind: QuestionKind | str,
    answers: Mapping[Key, Mapping[Key, object]],
    *,
    options: Sequence[Answer] | None = None,
    min_items: int = MIN_ITEMS,
) -> QuestionAgreement:
    """Agreement on one question from ``answers[item][reviewer] = value`` (``None`` = not answered).

    ``options`` is the question's list of choices: the categories of a categorical question, the scale of an
    ordinal one in order (its full domain, so that unused points count), the labels of a multi-label one. Without
    it the values seen are used (ordinal values must then be numbers, ordered as numbers); a boolean question's
    domain is ``[False, True]``. Answers outside ``options`` are kept, after the listed ones. A free-text question
    has no agreement: ``QuestionKind("text")`` raises ``ValueError``."""
    kind = QuestionKind(kind)
    table = _clean(kind, answers)
    reviewers = _sorted_keys({reviewer for row in table.values() for reviewer in row})
    n_answers = sum(len(row) for row in table.values())
    n_items = sum(1 for row in table.values() if len(row) >= 2)
    meaningful = n_items >= min_items

    per_label: dict[Key, LabelAgreement] = {}
    alpha: float | None
    reason: str | None
    interval: float | None = None
    if kind is QuestionKind.MULTI_LABEL:
        label_sets = cast("dict[Key, dict[Key, frozenset[str]]]", table)  # what _clean keeps of a multi-label answer
        labels = _domain(
            kind, (label for row in label_sets.values() for chosen in row.values() for label in chosen), options
        )
        per_label = {
            label: _label_agreement(label, label_sets, reviewers, n_items, n_answers, min_items) for label in labels
        }
        alpha, reason = None, MULTI_LABEL_ALPHA
        # The pair figures treat an answer's whole set of labels as one category (exact match).
        pairs = _pairs(table, reviewers, domain=None, min_items=min_items)
    else:
        domain = _domain(kind, (value for row in table.values() for value in row.values()), options)
        alpha, reason = _alpha(table, reviewers, domain, kind.level_of_measurement)
        ordinal = kind is QuestionKind.ORDINAL
        numeric = all(_numeric(value) for row in table.values() for value in row.values())
        interval = _interval_alpha(table, reviewers) if ordinal and numeric and alpha is not None else None
        pairs = _pairs(table, reviewers, domain=domain, min_items=min_items, weighted=ordinal)
    return QuestionAgreement(
        kind=kind,
        level_of_measurement=kind.level_of_measurement,
        alpha=alpha,
        alpha_reason=reason,
        n_items=n_items,
        n_answers=n_answers,
        n_reviewers=len(reviewers),
        meaningful=meaningful,
        pairs=pairs,
        per_label=per_label,
        alpha_interval=interval,
    )


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits(kind: QuestionKind, value: object) -> bool:
    """Whether `value` can be an answer of this kind (anything else counts as not answered, never as an error)."""
    if kind is QuestionKind.BOOLEAN:
        return isinstance(value, bool)
    if kind in (QuestionKind.CATEGORICAL, QuestionKind.ORDINAL):  # an ordinal scale's points may be words
        return isinstance(value, str | int | float) and not isinstance(value, bool) and _finite(value)
    if isinstance(value, str):
        return True
    return isinstance(value, list | tuple | set | frozenset) and all(isinstance(label, str) for label in value)


def _clean(kind: QuestionKind, answers: Mapping[Key, Mapping[Key, object]]) -> dict[Key, dict[Key, Answer]]:
    """The answers without the missing ones (``None``, NaN, a value of the wrong type); a multi-label answer as a
    frozenset of labels (a lone string is one label)."""
    table: dict[Key, dict[Key, Answer]] = {}
    for item, row in answers.items():
        kept: dict[Key, Answer] = {}
        for reviewer, value in row.items():
            if value is None or not _fits(kind, value):
                continue
            if kind is QuestionKind.MULTI_LABEL:
                kept[reviewer] = frozenset(
                    [value] if isinstance(value, str) else cast("Iterable[str]", value)
                )  # as _fits checked
            else:
                kept[reviewer] = value
        if kept:
            table[item] = kept
    return table


def _domain(kind: QuestionKind, seen: Iterable[Answer], options: Sequence[Answer] | None) -> list[Answer]:
    """The values in order: ``options`` first, then any other value seen (sorted where they can be)."""
    if kind is QuestionKind.BOOLEAN and options is None:
        options = [False, True]
    listed = list(dict.fromkeys(options or []))
    extra = [value for value in dict.fromkeys(seen) if value not in set(listed)]
    try:
        extra.sort()  # type: ignore[call-arg]  # values of one type order; mixed ones fall back to repr
    except TypeError:
        extra.sort(key=repr)
    return listed + extra


def _sorted_keys(keys: Iterable[Key]) -> list[Key]:
    """Reviewer (or label) keys in a stable order: numbers by value, then everything else by its text."""

    def order(key: Key) -> tuple[int, float, str]:
        if isinstance(key, int | float) and not isinstance(key, bool):
            return (0, float(key), "")
        return (1, 0.0, str(key))

    return sorted(keys, key=order)


def _alpha(
    table: Mapping[Key, Mapping[Key, Answer]],
    reviewers: Sequence[Key],
    domain: Sequence[Answer],
    level: str,
) -> tuple[float | None, str | None]:
    """Krippendorff's alpha over the table, or ``None`` and why it is undefined."""
    if not table:
        return None, NO_ANSWERS
    if len(reviewers) < 2:
        return None, ONE_REVIEWER
    pairable = [row for row in table.values() if len(row) >= 2]
    if not pairable:
        return None, NO_OVERLAP
    if len({value for row in pairable for value in row.values()}) < 2:
        return None, NO_VARIATION
    code = {value: index for index, value in enumerate(domain)}
    # Rows are reviewers, columns items; only pairable items (the others carry no information for alpha).
    data = np.full((len(reviewers), len(pairable)), np.nan)
    position = {reviewer: index for index, reviewer in enumerate(reviewers)}
    for column, row in enumerate(pairable):
        for reviewer, value in row.items():
            data[position[reviewer], column] = code[value]
    value = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=list(range(len(domain))))
    return float(value), None


def _interval_alpha(table: Mapping[Key, Mapping[Key, Answer]], reviewers: Sequence[Key]) -> float | None:
    """Krippendorff's alpha with the interval distance over the answers' own values (the scale's points, numbers).
    Called only where the ordinal alpha is defined (two reviewers, an overlap, some variation)."""
    pairable = [row for row in table.values() if len(row) >= 2]
    position = {reviewer: index for index, reviewer in enumerate(reviewers)}
    data = np.full((len(reviewers), len(pairable)), np.nan)
    for column, row in enumerate(pairable):
        for reviewer, value in row.items():
            data[position[reviewer], column] = float(cast(float, value))  # numeric: the caller checked
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))


def _pairs(
    table: Mapping[Key, Mapping[Key, Answer]],
    reviewers: Sequence[Key],
    *,
    domain: Sequence[Answer] | None,
    min_items: int,
    weighted: bool = False,
) -> list[PairAgreement]:
    """Cohen's kappa and percent agreement for each pair of reviewers (in sorted order); with `weighted` (an ordinal
    scale, `domain` its points in order) also the linearly and quadratically weighted kappas."""
    pairs = []
    for first, second in itertools.combinations(reviewers, 2):
        shared = [(row[first], row[second]) for row in table.values() if first in row and second in row]
        n_items = len(shared)
        meaningful = n_items >= min_items
        if not shared:
            pairs.append(PairAgreement((first, second), 0, None, None, meaningful, PAIR_NO_OVERLAP))
            continue
        percent = sum(1 for a, b in shared if a == b) / n_items
        values = domain if domain is not None else list(dict.fromkeys(v for pair in shared for v in pair))
        if len({v for pair in shared for v in pair}) < 2:
            pairs.append(PairAgreement((first, second), n_items, None, percent, meaningful, NO_VARIATION))
            continue
        code = {value: index for index, value in enumerate(values)}
        first_codes, second_codes = [code[a] for a, _ in shared], [code[b] for _, b in shared]
        labels = list(range(len(values)))
        kappa = cohen_kappa_score(first_codes, second_codes, labels=labels)
        linear = quadratic = None
        if weighted:
            # scikit-learn weighs by the labels' positions in `labels`: a scale's points are consecutive integers,
            # so their positions are their distances.
            linear = float(cohen_kappa_score(first_codes, second_codes, labels=labels, weights="linear"))
            quadratic = float(cohen_kappa_score(first_codes, second_codes, labels=labels, weights="quadratic"))
        pairs.append(
            PairAgreement((first, second), n_items, float(kappa), percent, meaningful, None, linear, quadratic)
        )
    return pairs


def _label_agreement(
    label: Key,
    table: Mapping[Key, Mapping[Key, frozenset[str]]],
    reviewers: Sequence[Key],
    n_items: int,
    n_answers: int,
    min_items: int,
) -> LabelAgreement:
    """One label as a yes/no question: every reviewer who answered says whether they chose it."""
    chosen = {item: {reviewer: label in labels for reviewer, labels in row.items()} for item, row in table.items()}
    alpha, reason = _alpha(chosen, reviewers, [False, True], "nominal")
    return LabelAgreement(
        label=label,
        alpha=alpha,
        alpha_reason=reason,
        n_items=n_items,
        n_answers=n_answers,
        meaningful=n_items >= min_items,
        pairs=_pairs(chosen, reviewers, domain=[False, True], min_items=min_items),
    )
