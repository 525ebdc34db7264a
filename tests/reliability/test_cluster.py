"""Two application servers behind nginx: the load through them, sessions, client addresses, static files, the
body limit and the shared throttle.

bench/cluster.py does the work (its own database and Redis database, two gunicorn instances, Debian's nginx, the
clients and every check); this test runs it in this process and reads its report. The load lasts
MASTERBRAIN_CLUSTER_SECONDS: 5 seconds by default, 15 in ``make test-all``; `make cluster` runs it for a minute,
with the same load against one instance directly to compare.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bench.cluster import NGINX, THROTTLE_LIMIT, cluster_run, nginx_conf
from tests.reliability import base_url

ROOT = Path(__file__).resolve().parents[2]

SECONDS = float(os.environ.get("MASTERBRAIN_CLUSTER_SECONDS") or 5)
REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.xdist_group("redis-db-15")  # a fixed Redis database, flushed by the run
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
    assert report.sessions["signed in on 1, through nginx"] == 200
    assert report.sessions["  served by instance 1"] > 0 and report.sessions["  served by instance 2"] > 0
    # The address a sign-in counts under is the client's, through nginx too; a forged header names nothing.
    assert set(report.addresses.values()) == {"127.0.0.7", "127.0.0.8"}
    assert set(report.static.values()) == {200}
    assert report.body_limit[1] == 413
    # Both instances counted against one limit in Redis: together they accepted it once.
    accepted = [sum(n for status, n in served.items() if status < 300) for served in report.throttle]
    assert sum(accepted) == THROTTLE_LIMIT and all(accepted)
    assert sum(served[429] for served in report.throttle) == 2 * THROTTLE_LIMIT


def test_nginx_accepts_the_generated_configuration_and_the_documented_one_is_it(tmp_path: Path) -> None:
    # docs/CLUSTER.md's example: two instances on ports 8001 and 8002, the default body limit (32 MiB).
    conf = nginx_conf(port=8080, upstreams=[8001, 8002], max_body_bytes=32 * 1024 * 1024, timeout=600)
    (tmp_path / "temp").mkdir()
    (tmp_path / "nginx.conf").write_text(conf)

    checked = subprocess.run(
        [str(NGINX), "-t", "-e", "error.log", "-c", str(tmp_path / "nginx.conf"), "-p", f"{tmp_path}/"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr
    assert f"```nginx\n{conf}```" in (ROOT / "docs" / "CLUSTER.md").read_text()
