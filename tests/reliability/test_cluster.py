"""Two application servers behind nginx: the load through them, sessions, client addresses, static files, the
body limit and the shared throttle.

bench/cluster.py does the work (its own database and Redis database, two gunicorn instances, Debian's nginx, the
clients and every check); this test runs it in this process and reads its report. The load lasts
MASTERBRAIN_CLUSTER_SECONDS: 5 seconds by default, 15 in ``make test-all``; `make cluster` runs it for a minute,
with the same load against one instance directly to compare.
"""

from __future__ import annotations

import os

import pytest

from bench.cluster import THROTTLE_LIMIT, cluster_run
from tests.reliability import base_url

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SECONDS = float(os.environ.get("MASTERBRAIN_CLUSTER_SECONDS") or 5)
REDIS_URL = "redis://127.0.0.1:6379/15"


def test_two_instances_behind_nginx_share_the_database_sessions_and_throttles() -> None:
    report = cluster_run(
        database_url=base_url(),
        database_name=f"mb_cluster_{os.getpid()}",
        redis_url=REDIS_URL,
        seconds=SECONDS,
        baseline=False,
    )

    assert report.problems == []
    assert report.load is not None
    figures = report.load.figures
    assert figures["seconds"] >= SECONDS
    assert figures["errors"] == 0 and figures["unexpected"] == 0 and figures["problems"] == 0
    assert figures["outcomes"]["created"] > 0 and figures["outcomes"]["unchanged"] > 0
    # Each instance served a share of the load, and together every request.
    assert len(report.served) == 2 and all(sum(served.values()) > 0 for served in report.served)
    assert sum(sum(served.values()) for served in report.served) == figures["requests"]
    # A session made on instance 1 is valid on instance 2 and through nginx; the page needs one.
    assert report.sessions["signed out, instance 2"] == 302
    assert report.sessions["signed in on 1, instance 2"] == 200
    assert report.sessions["signed in on 1, nginx #1"] == report.sessions["signed in on 1, nginx #2"] == 200
    # The address a sign-in counts under is the client's, through nginx too; a forged header names nothing.
    assert set(report.addresses.values()) == {"127.0.0.7", "127.0.0.8"}
    assert set(report.static.values()) == {200}
    assert report.body_limit[1] == 413
    # Both instances counted against one limit in Redis: together they accepted it once.
    accepted = [sum(n for status, n in served.items() if status < 300) for served in report.throttle]
    assert sum(accepted) == THROTTLE_LIMIT and all(accepted)
    assert sum(served[429] for served in report.throttle) == 2 * THROTTLE_LIMIT
