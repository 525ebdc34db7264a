"""No parser costs more than linear time in the size of its input, whatever the input is made of.

Each case (bench/parser_cost.py, whose worst figure `make bench` prints) is one entry point on an input made of
repetitions of what it looks for, timed at about 10 KB and at 100 times that in the same run.
"""

from __future__ import annotations

import pytest

from bench.parser_cost import CASES, FACTOR, MAX_GROWTH, Case, measure
from chats.formats.canonical import FORMATS


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_cost_per_byte_does_not_grow_with_the_input(case: Case) -> None:
    figures = measure(case)

    assert figures.bytes_ratio >= 0.9 * FACTOR, figures
    assert figures.growth <= MAX_GROWTH, f"super-linear: {figures}"


def test_every_format_has_cases() -> None:
    measured = {case.name.split("/")[0] for case in CASES}

    assert set(FORMATS) <= measured
