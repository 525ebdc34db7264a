"""Eight clients ingest at once against the real server: no error, nothing duplicated or half-stored.

bench/load.py does the work (its own database, gunicorn, the clients, the check of every conversation); this
test runs it and reads its figures. The load lasts MASTERBRAIN_LOAD_SECONDS: 10 seconds by default, a minute in
``make test-all`` (which runs the tests marked ``slow`` again at full length).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability import base_url

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("MASTERBRAIN_LOAD_SECONDS") or 10)


def test_eight_clients_at_once_get_no_error_and_store_nothing_twice() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "bench/load.py",
            "--duration",
            str(SECONDS),
            "--clients",
            "8",
            "--database-url",
            base_url(),
            "--database-name",
            f"mb_load_{os.getpid()}",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    print(completed.stdout)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    figures = json.loads(completed.stdout.strip().splitlines()[-1])
    assert figures["seconds"] >= SECONDS
    assert figures["errors"] == 0 and figures["unexpected"] == 0 and figures["problems"] == 0
    assert figures["single_requests"] > 0 and figures["bulk_requests"] > 0
    assert figures["outcomes"]["created"] > 0 and figures["outcomes"]["unchanged"] > 0
    assert figures["outcomes"]["updated"] > 0  # shared conversations were extended while others sent them
