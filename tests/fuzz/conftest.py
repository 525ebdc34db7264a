"""Hypothesis settings of the fuzz suite: bounded example counts, no deadline, and reproducible runs in CI.

The profiles are registered here and applied by the fuzz tests themselves (``settings.get_profile``); none is
loaded globally, so the rest of the suite keeps its own settings.

- ``CI=true``: derandomized (the same examples on every run, so a failure in CI fails again on a laptop) and
  no example database.
- otherwise: random examples, with failures saved in ``.hypothesis/`` and replayed first on the next run.
- ``FUZZ_EXAMPLES=N`` sets the example count of every fuzz test to N, for a longer hunt
  (``FUZZ_EXAMPLES=5000 pytest tests/fuzz``).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
_OVERRIDE = os.environ.get("FUZZ_EXAMPLES", "").strip()

PARSER_EXAMPLES = 200  # per test: a parser call takes about a millisecond
API_EXAMPLES = 25  # per operation: a request takes tens of milliseconds
STATEFUL_EXAMPLES = 20  # sequences per caller, of up to STATEFUL_STEPS calls each
STATEFUL_STEPS = 12
WRITE_EXAMPLES = 25  # per write route (tests/fuzz/test_write_endpoints.py): a request and a state snapshot each


def _examples(default: int) -> int:
    return int(_OVERRIDE) if _OVERRIDE else default


_COMMON: dict[str, Any] = {
    "deadline": None,
    "derandomize": IN_CI,
    "print_blob": True,
    # Generated documents are big by design (deep nesting, long strings), and the API tests run inside one
    # database transaction: neither is a mistake of the strategy.
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
}
if IN_CI:
    _COMMON["database"] = None

settings.register_profile("fuzz-parsers", max_examples=_examples(PARSER_EXAMPLES), **_COMMON)
# No shrinking for the API: a failing request is reported as generated (shrinking replays requests for minutes).
settings.register_profile(
    "fuzz-api",
    max_examples=_examples(API_EXAMPLES),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
settings.register_profile(
    "fuzz-stateful",
    max_examples=_examples(STATEFUL_EXAMPLES),
    stateful_step_count=int(os.environ.get("FUZZ_STEPS", "") or STATEFUL_STEPS),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
settings.register_profile(
    "fuzz-writes",
    max_examples=_examples(WRITE_EXAMPLES),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
