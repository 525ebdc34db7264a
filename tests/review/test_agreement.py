"""Agreement statistics (chats/review/agreement.py) on the published examples in design/review.md, the degenerate
cases, multi-label questions and the pair figures; per question and rubric version (chats/review/rubric_agreement.py);
the chart data (chats/review/agreement_chart.py)."""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from chats.jinja2 import bar_chart_layout
from chats.review.agreement import (
    MULTI_LABEL_ALPHA,
    NO_ANSWERS,
    NO_OVERLAP,
    NO_VARIATION,
    ONE_REVIEWER,
    PAIR_NO_OVERLAP,
    QuestionKind,
    question_agreement,
)
from chats.review.agreement_chart import agreement_chart_layout, agreement_chart_rows
from chats.review.rubric_agreement import rubric_agreement

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units, "." is missing.
KRIPPENDORFF_2011 = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}


def krippendorff_2011() -> dict[int, dict[str, int | None]]:
    table: dict[int, dict[str, int | None]] = {}
    for observer, line in KRIPPENDORFF_2011.items():
        for unit, value in enumerate(line.split(), start=1):
            table.setdefault(unit, {})[observer] = None if value == "." else int(value)
    return table


def cohen_50_items() -> dict[int, dict[str, str]]:
    """50 items: both yes 20, A yes / B no 5, A no / B yes 10, both no 15."""
    cells = [("yes", "yes", 20), ("yes", "no", 5), ("no", "yes", 10), ("no", "no", 15)]
    rows = [(a, b) for a, b, count in cells for _ in range(count)]
    return {item: {"A": a, "B": b} for item, (a, b) in enumerate(rows)}


# --------------------------------------------------------------------------------------------------------------
# Published examples


def test_cohen_kappa_on_the_published_50_item_example() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, cohen_50_items(), options=["yes", "no"])

    [pair] = result.pairs
    assert pair.reviewers == ("A", "B")
    assert pair.n_items == 50
    assert pair.percent_agreement == pytest.approx(0.70)
    assert pair.kappa == pytest.approx(0.40)
    assert pair.meaningful is True
    assert pair.reason is None


def test_the_same_example_as_a_boolean_question_gives_the_same_kappa() -> None:
    table = {item: {r: v == "yes" for r, v in row.items()} for item, row in cohen_50_items().items()}

    [pair] = question_agreement("boolean", table).pairs

    assert pair.kappa == pytest.approx(0.40)
    assert pair.percent_agreement == pytest.approx(0.70)


def test_krippendorff_2011_nominal_alpha() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, krippendorff_2011())

    assert result.level_of_measurement == "nominal"
    assert result.alpha == pytest.approx(0.743, abs=5e-4)
    assert result.alpha_reason is None


def test_krippendorff_2011_ordinal_alpha_with_the_scale_given() -> None:
    result = question_agreement(QuestionKind.ORDINAL, krippendorff_2011(), options=[1, 2, 3, 4, 5])

    assert result.level_of_measurement == "ordinal"
    assert result.alpha == pytest.approx(0.815, abs=5e-4)


def test_ordinal_values_can_be_words_ordered_by_the_scale() -> None:
    words = ["none", "low", "some", "high", "full"]
    table = {
        unit: {r: None if v is None else words[v - 1] for r, v in row.items()}
        for unit, row in krippendorff_2011().items()
    }

    result = question_agreement(QuestionKind.ORDINAL, table, options=words)

    assert result.alpha == pytest.approx(0.815, abs=5e-4)


def test_ordinal_alpha_depends_on_the_scale_order() -> None:
    # The same answers on a scale in another order are different disagreements.
    scrambled = question_agreement(QuestionKind.ORDINAL, krippendorff_2011(), options=[3, 1, 5, 2, 4])

    assert scrambled.alpha is not None
    assert scrambled.alpha != pytest.approx(0.815, abs=5e-3)


def test_counts_behind_the_krippendorff_example() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, krippendorff_2011())

    # Unit 12 has a single answer: counted as an answer, not as a pairable item.
    assert result.n_items == 11
    assert result.n_answers == 41
    assert result.n_reviewers == 4
    assert result.meaningful is True
    assert [pair.reviewers for pair in result.pairs] == [
        ("A", "B"),
        ("A", "C"),
        ("A", "D"),
        ("B", "C"),
        ("B", "D"),
        ("C", "D"),
    ]
    by_pair = {pair.reviewers: pair for pair in result.pairs}
    # A and C both answered units 2-9: 8 items, agreeing on 3, 4, 5, 7, 9.
    assert by_pair["A", "C"].n_items == 8
    assert by_pair["A", "C"].percent_agreement == pytest.approx(5 / 8)
    assert by_pair["A", "C"].meaningful is False
    # B and D: units 1-10, agreeing on all but unit 6.
    assert by_pair["B", "D"].n_items == 10
    assert by_pair["B", "D"].percent_agreement == pytest.approx(0.9)
    assert by_pair["B", "D"].meaningful is True


# --------------------------------------------------------------------------------------------------------------
# Degenerate cases


def test_empty_input() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, {})

    assert result.alpha is None
    assert result.alpha_reason == NO_ANSWERS
    assert (result.n_items, result.n_answers, result.n_reviewers) == (0, 0, 0)
    assert result.pairs == []
    assert result.meaningful is False


def test_items_with_only_missing_answers_count_as_empty() -> None:
    result = question_agreement(QuestionKind.ORDINAL, {1: {"a": None, "b": None}, 2: {}})

    assert result.alpha_reason == NO_ANSWERS
    assert result.n_answers == 0


def test_one_reviewer() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, {item: {"solo": item % 3} for item in range(20)})

    assert result.alpha is None
    assert result.alpha_reason == ONE_REVIEWER
    assert result.n_items == 0
    assert result.n_answers == 20
    assert result.pairs == []


def test_no_overlap_between_reviewers() -> None:
    table = {item: {"a" if item % 2 else "b": "x" if item % 3 else "y"} for item in range(12)}

    result = question_agreement(QuestionKind.CATEGORICAL, table)

    assert result.alpha is None
    assert result.alpha_reason == NO_OVERLAP
    [pair] = result.pairs
    assert (pair.n_items, pair.kappa, pair.percent_agreement) == (0, None, None)
    assert pair.reason == PAIR_NO_OVERLAP
    assert pair.meaningful is False


def test_all_identical_answers_leave_alpha_and_kappa_undefined_but_agreement_full() -> None:
    table = {item: {"a": "ok", "b": "ok", "c": "ok"} for item in range(15)}

    result = question_agreement(QuestionKind.CATEGORICAL, table, options=["ok", "bad"])

    assert result.alpha is None
    assert result.alpha_reason == NO_VARIATION
    assert result.n_items == 15
    assert all(pair.kappa is None and pair.reason == NO_VARIATION for pair in result.pairs)
    assert all(pair.percent_agreement == 1.0 for pair in result.pairs)


def test_one_pair_without_variation_among_others_with_it() -> None:
    table = {item: {"a": "x", "b": "x", "c": "x" if item % 2 else "y"} for item in range(10)}

    by_pair = {pair.reviewers: pair for pair in question_agreement("categorical", table).pairs}

    assert by_pair["a", "b"].kappa is None
    assert by_pair["a", "c"].kappa == pytest.approx(0.0)
    assert by_pair["a", "c"].percent_agreement == pytest.approx(0.5)


def test_perfect_agreement_with_variation_is_one() -> None:
    table = {item: {"a": item % 4, "b": item % 4} for item in range(12)}

    result = question_agreement(QuestionKind.ORDINAL, table, options=[0, 1, 2, 3])

    assert result.alpha == pytest.approx(1.0)
    assert result.pairs[0].kappa == pytest.approx(1.0)


def test_systematic_disagreement_is_negative() -> None:
    table = {item: {"a": item % 2 == 0, "b": item % 2 == 1} for item in range(12)}

    result = question_agreement(QuestionKind.BOOLEAN, table)

    assert result.alpha is not None and result.alpha < 0
    assert result.pairs[0].kappa == pytest.approx(-1.0)
    assert result.pairs[0].percent_agreement == 0.0


# --------------------------------------------------------------------------------------------------------------
# The meaningful flag


@pytest.mark.parametrize(("items", "meaningful"), [(9, False), (10, True)])
def test_a_figure_over_fewer_than_ten_items_is_marked(items: int, meaningful: bool) -> None:
    table = {item: {"a": item % 3, "b": item % 3 if item else 2} for item in range(items)}

    result = question_agreement(QuestionKind.CATEGORICAL, table)

    assert result.n_items == items
    assert result.alpha is not None
    assert result.meaningful is meaningful
    assert result.pairs[0].meaningful is meaningful


def test_text_questions_have_no_agreement() -> None:
    with pytest.raises(ValueError):
        question_agreement("text", {1: {"a": "fine", "b": "fine"}})


def test_min_items_is_a_parameter() -> None:
    table = {item: {"a": item % 2, "b": item % 2} for item in range(5)}

    assert question_agreement("categorical", table, min_items=5).meaningful is True
    assert question_agreement("categorical", table, min_items=6).meaningful is False


# --------------------------------------------------------------------------------------------------------------
# Multi-label


def test_multi_label_gives_alpha_per_label_as_yes_no() -> None:
    table = {
        1: {"a": ["tone", "facts"], "b": ["facts"]},
        2: {"a": ["tone"], "b": ["tone"]},
        3: {"a": [], "b": ["facts"]},
        4: {"a": ["facts"], "b": ["facts"], "c": ["facts", "tone"]},
        5: {"c": ["tone"]},
    }

    result = question_agreement(QuestionKind.MULTI_LABEL, table, options=["tone", "facts", "safety"])

    assert result.alpha is None
    assert result.alpha_reason == MULTI_LABEL_ALPHA
    assert list(result.per_label) == ["tone", "facts", "safety"]
    tone, facts, safety = result.per_label.values()
    # "tone" as yes/no per (item, reviewer): 1 (y, n), 2 (y, y), 3 (n, n), 4 (n, n, y).
    single = question_agreement(
        QuestionKind.BOOLEAN,
        {
            1: {"a": True, "b": False},
            2: {"a": True, "b": True},
            3: {"a": False, "b": False},
            4: {"a": False, "b": False, "c": True},
            5: {"c": True},
        },
    )
    assert tone.alpha == pytest.approx(single.alpha)
    assert facts.alpha is not None
    # Nobody chose "safety": no variation, said rather than raised.
    assert safety.alpha is None
    assert safety.alpha_reason == NO_VARIATION
    assert tone.n_items == result.n_items == 4
    assert result.n_answers == 10
    assert tone.meaningful is False
    tone_pairs = {pair.reviewers: pair for pair in tone.pairs}
    assert tone_pairs["a", "b"].percent_agreement == pytest.approx(3 / 4)


def test_multi_label_pairs_compare_whole_sets() -> None:
    table: dict[int, dict[str, list[str]]] = {
        1: {"a": ["x", "y"], "b": ["y", "x"]},
        2: {"a": ["x"], "b": ["x", "y"]},
        3: {"a": [], "b": []},
        4: {"a": ["y"], "b": ["y"]},
    }

    [pair] = question_agreement(QuestionKind.MULTI_LABEL, table).pairs

    assert pair.n_items == 4
    assert pair.percent_agreement == pytest.approx(3 / 4)
    assert pair.kappa is not None


def test_multi_label_labels_not_in_options_are_still_reported() -> None:
    table = {1: {"a": ["x"], "b": ["new"]}, 2: {"a": ["x"], "b": ["x"]}}

    result = question_agreement(QuestionKind.MULTI_LABEL, table, options=["x"])

    assert list(result.per_label) == ["x", "new"]


# --------------------------------------------------------------------------------------------------------------
# Reviewer keys, serialisation


def test_pairs_are_sorted_numerically_for_numeric_reviewers() -> None:
    table = {item: {10: item % 2, 9: item % 2, 2: 1 - item % 2} for item in range(4)}

    result = question_agreement(QuestionKind.CATEGORICAL, table)

    assert [pair.reviewers for pair in result.pairs] == [(2, 9), (2, 10), (9, 10)]


def test_as_dict_is_plain_data() -> None:
    result = question_agreement(QuestionKind.MULTI_LABEL, {1: {"a": ["x"], "b": ["x", "y"]}})

    data = result.as_dict()

    assert data["kind"] == "multi_label"
    assert data["alpha"] is None
    assert data["pairs"][0]["reviewers"] == ["a", "b"]
    assert [label["label"] for label in data["per_label"]] == ["x", "y"]


# --------------------------------------------------------------------------------------------------------------
# The chart


def test_chart_rows_fit_the_dashboard_partial() -> None:
    questions = {
        "accuracy": question_agreement(QuestionKind.ORDINAL, krippendorff_2011(), options=[1, 2, 3, 4, 5]),
        "issues": question_agreement(
            QuestionKind.MULTI_LABEL,
            {item: {"a": ["x"] if item % 2 else [], "b": ["x"] if item % 3 else []} for item in range(4)},
        ),
        "empty": question_agreement(QuestionKind.CATEGORICAL, {}),
    }

    rows = agreement_chart_rows(questions)

    assert rows[0] == ("accuracy", 0.82)
    assert rows[1][0] == "issues: x (n=4, too few)"
    assert -1 <= rows[1][1] <= 1
    assert len(rows) == 2  # the undefined figure is left out
    chart = bar_chart_layout(list(rows))
    assert [bar["full_label"] for bar in chart["bars"]] == ["accuracy", "issues: x (n=4, too few)"]


def test_chart_layout_uses_a_fixed_scale_around_zero() -> None:
    chart = agreement_chart_layout([("good", 1.0), ("half", 0.5), ("bad", -0.5), ("chance", 0.0)])

    good, half, bad, chance = chart["bars"]
    zero = chart["zero_x"]
    assert good["x"] == half["x"] == zero
    assert half["width"] * 2 == good["width"]
    assert bad["x"] + bad["width"] == zero
    assert bad["width"] == half["width"]
    assert chance["width"] == 0
    # The keys the _bar_chart.html markup reads.
    assert {"label", "full_label", "count", "y", "text_y", "width", "count_x"} <= good.keys()
    assert {"bars", "label_width", "label_x", "width", "height", "bar_height"} <= chart.keys()


# --------------------------------------------------------------------------------------------------------------
# Properties

REVIEWERS = ["r1", "r2", "r3", "r4"]
answer_tables = st.dictionaries(
    st.integers(0, 15),
    st.dictionaries(st.sampled_from(REVIEWERS), st.one_of(st.none(), st.integers(0, 3)), max_size=4),
    max_size=16,
)


@settings(max_examples=150, deadline=None)
@given(table=answer_tables, kind=st.sampled_from([QuestionKind.CATEGORICAL, QuestionKind.ORDINAL]))
def test_never_raises_and_figures_stay_in_range(table: dict[int, dict[str, Any]], kind: QuestionKind) -> None:
    result = question_agreement(kind, table, options=[0, 1, 2, 3])

    assert (result.alpha is None) == (result.alpha_reason is not None)
    if result.alpha is not None:
        assert -1.0 - 1e-9 <= result.alpha <= 1.0 + 1e-9
    assert result.n_items <= len(table)
    for pair in result.pairs:
        assert pair.reviewers[0] < pair.reviewers[1]
        if pair.percent_agreement is not None:
            assert 0.0 <= pair.percent_agreement <= 1.0
        if pair.kappa is not None:
            assert -1.0 - 1e-9 <= pair.kappa <= 1.0 + 1e-9
        assert pair.meaningful is (pair.n_items >= 10)


@settings(max_examples=60, deadline=None)
@given(
    table=st.dictionaries(
        st.integers(0, 15),
        st.dictionaries(st.sampled_from(REVIEWERS), st.lists(st.sampled_from("xyz"), max_size=3), max_size=4),
        max_size=16,
    )
)
def test_multi_label_never_raises(table: dict[int, dict[str, list[str]]]) -> None:
    result = question_agreement(QuestionKind.MULTI_LABEL, table, options=["x", "y", "z"])

    assert list(result.per_label) == ["x", "y", "z"]
    for label in result.per_label.values():
        assert (label.alpha is None) == (label.alpha_reason is not None)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 3), min_size=2, max_size=20).filter(lambda v: len(set(v)) > 1),
    reviewers=st.integers(2, 4),
)
def test_alpha_is_one_when_everyone_agrees_on_varied_data(values: list[int], reviewers: int) -> None:
    table = {item: {f"r{r}": value for r in range(reviewers)} for item, value in enumerate(values)}

    for kind in (QuestionKind.CATEGORICAL, QuestionKind.ORDINAL):
        result = question_agreement(kind, table, options=[0, 1, 2, 3])
        assert result.alpha == pytest.approx(1.0)
        assert all(pair.kappa == pytest.approx(1.0) for pair in result.pairs)


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=20))
def test_kappa_and_agreement_are_symmetric_in_the_pair(pairs: list[tuple[int, int]]) -> None:
    forward = {item: {"a": x, "b": y} for item, (x, y) in enumerate(pairs)}
    backward = {item: {"a": y, "b": x} for item, (x, y) in enumerate(pairs)}

    [one] = question_agreement("categorical", forward).pairs
    [other] = question_agreement("categorical", backward).pairs

    assert one.percent_agreement == other.percent_agreement
    if one.kappa is None:
        assert other.kappa is None
    else:
        assert other.kappa == pytest.approx(one.kappa)


# --------------------------------------------------------------------------------------------------------------
# Ordinal questions: interval alpha and weighted kappa, cross-checked against the krippendorff package and
# scikit-learn on the scale's own numbers


def test_krippendorff_2011_interval_alpha_is_the_published_figure() -> None:
    result = question_agreement(QuestionKind.ORDINAL, krippendorff_2011(), options=[1, 2, 3, 4, 5])

    assert result.alpha_interval == pytest.approx(0.849, abs=5e-4)  # Krippendorff (2011): interval .849


def test_nominal_questions_have_no_interval_alpha_nor_weighted_kappa() -> None:
    result = question_agreement(QuestionKind.CATEGORICAL, cohen_50_items(), options=["yes", "no"])

    assert result.alpha_interval is None
    assert (result.pairs[0].kappa_linear, result.pairs[0].kappa_quadratic) == (None, None)


ordinal_pairs = st.lists(st.tuples(st.integers(-2, 3), st.integers(-2, 3)), min_size=2, max_size=25)


@settings(max_examples=60, deadline=None)
@given(pairs=ordinal_pairs)
def test_weighted_kappa_matches_scikit_learn_on_the_scales_numbers(pairs: list[tuple[int, int]]) -> None:
    table = {item: {"A": a, "B": b} for item, (a, b) in enumerate(pairs)}
    scale = list(range(-2, 4))

    [pair] = question_agreement(QuestionKind.ORDINAL, table, options=scale).pairs

    if len({value for both in pairs for value in both}) < 2:
        assert pair.kappa_linear is None and pair.kappa_quadratic is None
        return
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    for weights, figure in (("linear", pair.kappa_linear), ("quadratic", pair.kappa_quadratic)):
        expected = cohen_kappa_score(first, second, labels=scale, weights=weights)
        if np.isnan(expected):
            assert figure is None or np.isnan(figure)
        else:
            assert figure == pytest.approx(expected, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.one_of(st.none(), st.integers(1, 7)), min_size=3, max_size=3), min_size=2, max_size=20)
)
def test_interval_alpha_matches_the_krippendorff_package_on_the_scales_numbers(rows: list[list[int | None]]) -> None:
    table = {unit: {reviewer: value for reviewer, value in enumerate(row)} for unit, row in enumerate(rows)}

    result = question_agreement(QuestionKind.ORDINAL, table, options=list(range(1, 8)))

    if result.alpha is None:
        assert result.alpha_interval is None
        return
    pairable = [row for row in rows if sum(value is not None for value in row) >= 2]
    data = np.array([[np.nan if value is None else value for value in row] for row in pairable], dtype=float).T
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert result.alpha_interval == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------------------------------------------
# A queue's agreement: per question and rubric version


def _reviews(version: int, answers_by_reviewer: dict[str, list[Any]], key: str) -> list[tuple[int, str, int, Any]]:
    return [
        (item, reviewer, version, {key: value})
        for reviewer, values in answers_by_reviewer.items()
        for item, value in enumerate(values)
    ]


def test_a_question_changed_from_multi_label_to_categorical_is_two_figures_and_never_raises() -> None:
    before = {"key": "issue", "prompt": "Issues?", "type": "multi_label", "options": ["a", "b"]}
    after = {"key": "issue", "prompt": "Issues?", "type": "categorical", "options": ["a", "b"]}
    versions = {1: [before], 2: [after]}
    reviews = _reviews(1, {"x": [["a"], ["a", "b"]], "y": [["a"], ["b"]]}, "issue")
    reviews += _reviews(2, {"x": ["a", "b"], "y": ["a", "a"]}, "issue")
    # A stored answer of the wrong type (a list under the categorical version) is left out, not an error.
    reviews.append((9, "x", 2, {"issue": ["a"]}))

    groups = rubric_agreement(versions, reviews, current=2)

    assert [(g.key, g.versions, g.current, g.figure.kind) for g in groups] == [
        ("issue", [2], True, QuestionKind.CATEGORICAL),
        ("issue", [1], False, QuestionKind.MULTI_LABEL),
    ]
    assert [g.name for g in groups] == ["issue", "issue (v1)"]
    assert (groups[0].figure.n_answers, groups[1].figure.n_answers) == (4, 4)


def test_versions_in_which_a_question_is_the_same_are_pooled() -> None:
    ok = {"key": "ok", "prompt": "OK?", "type": "boolean"}
    note = {"key": "note", "prompt": "Why?", "type": "text"}
    versions = {1: [ok], 2: [{**ok, "target": "conversation"}, note], 3: [ok, {**note, "prompt": "Why not?"}]}
    reviews = _reviews(1, {"x": [True], "y": [True]}, "ok") + _reviews(3, {"x": [False], "y": [True]}, "ok")
    reviews = [(item + 10 * version, who, version, answers) for item, who, version, answers in reviews]

    (group,) = rubric_agreement(versions, reviews, current=3)

    assert (group.key, group.versions, group.current, group.figure.n_items) == ("ok", [1, 2, 3], True, 2)


def test_an_older_form_of_a_question_comes_after_the_current_ones() -> None:
    versions: dict[int, list[dict[str, Any]]] = {
        1: [{"key": "b", "prompt": "B", "type": "ordinal", "scale": {"min": 1, "max": 3}}],
        2: [
            {"key": "a", "prompt": "A", "type": "boolean"},
            {"key": "b", "prompt": "B", "type": "ordinal", "scale": {"min": 1, "max": 5}},
        ],
    }
    groups = rubric_agreement(versions, [], current=2)
    assert [(g.key, g.versions) for g in groups] == [("a", [2]), ("b", [2]), ("b", [1])]
