"""A real streaming replica behind the real server: reads that tolerate lag come from it, a writer reads their
writes, and a replica that lags or is down leaves every read on the primary, with a notice and no error.

A private PostgreSQL primary and its hot standby are made here, in a temporary folder (initdb, pg_basebackup -R,
pg_ctl; as the postgres user when the tests run as root), and removed at the end. gunicorn serves the application
with DATABASE_URL on the primary and DATABASE_REPLICA_URL on the standby. Which server answered is proved by what
a page shows while the standby's replay is paused (pg_wal_replay_pause) and a row changes on the primary: the
replica still has the old value.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.server import ROOT, Server, free_port, server_env

# About 30 s on an idle machine, most of it migrating the database and starting the two servers.
# One primary and standby for the module (session fixtures): its tests run on one worker, which builds them once.
pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.xdist_group("replica")]

BIN = Path(os.environ.get("MASTERBRAIN_PG_BIN", "/usr/lib/postgresql/15/bin"))
PASSWORD = "correct horse battery staple"
NOTICE = "read from the primary database while the read replica is unavailable or behind"


def _as_postgres(*args: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else list(args)


def _run(*args: str) -> None:
    completed = subprocess.run(_as_postgres(*args), capture_output=True, text=True, timeout=120, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")


@dataclass
class Cluster:
    """One PostgreSQL server of the pair: its data folder and port."""

    data: Path
    port: int
    sockets: Path

    def start(self) -> None:
        _run(
            str(BIN / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.data / "log"),
            "-o", f"-p {self.port} -k {self.sockets}",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        _run(str(BIN / "pg_ctl"), "stop", "-w", "-D", str(self.data), "-m", mode)

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def connect(self, name: str = "postgres") -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(self.url(name), autocommit=True)


@dataclass
class Pair:
    primary: Cluster
    replica: Cluster

    def primary_position(self) -> str:
        with self.primary.connect() as conn:
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()  # commits not yet written too
        assert row is not None
        return str(row[0])

    def wait_until_replica(self, *, received: bool = False, timeout: float = 20) -> None:
        """Wait until the standby has replayed (or, with ``received``, received) all the primary has written."""
        target = self.primary_position()
        function = "pg_last_wal_receive_lsn" if received else "pg_last_wal_replay_lsn"
        deadline = time.monotonic() + timeout
        with self.replica.connect() as conn:
            while time.monotonic() < deadline:
                row = conn.execute(f"SELECT {function}() >= %s::pg_lsn", [target]).fetchone()
                if row is not None and row[0]:
                    return
                time.sleep(0.05)
        raise AssertionError(f"the replica did not reach {target}")

    def sync_and_pause(self) -> None:
        """A fresh transaction replayed (the lag counts from the last one replayed), then replay paused."""
        with self.primary.connect() as conn:
            conn.execute("INSERT INTO heartbeat VALUES (now())")
        self.wait_until_replica()
        with self.replica.connect() as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            deadline = time.monotonic() + 10
            while conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() != ("paused",):
                assert time.monotonic() < deadline, "replay did not pause"
                time.sleep(0.05)

    def wait_until_lag_exceeds(self, seconds: float, timeout: float = 20) -> None:
        """Wait (replay paused) until the last transaction the standby replayed is older than ``seconds``."""
        deadline = time.monotonic() + timeout
        with self.replica.connect() as conn:
            while time.monotonic() < deadline:
                row = conn.execute(
                    "SELECT now() - pg_last_xact_replay_timestamp() > make_interval(secs => %s)", [seconds]
                ).fetchone()
                if row is not None and row[0]:
                    return
                time.sleep(0.05)
        raise AssertionError(f"the replica's lag did not pass {seconds} s")

    def resume(self) -> None:
        with self.replica.connect() as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
        self.wait_until_replica()


@pytest.fixture(scope="session")
def pair() -> Iterator[Pair]:
    if not (BIN / "initdb").exists():
        pytest.fail(f"the PostgreSQL server binaries are not in {BIN} (set MASTERBRAIN_PG_BIN)")
    root = Path(tempfile.mkdtemp(prefix="mb-replica-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    primary = Cluster(root / "primary", free_port(), root)
    replica = Cluster(root / "replica", free_port(), root)
    started: list[Cluster] = []
    try:
        _run(str(BIN / "initdb"), "-D", str(primary.data), "-U", "postgres", "-A", "trust", "--no-sync")
        with open(primary.data / "postgresql.conf", "a") as conf:
            conf.write(
                "\nlisten_addresses = '127.0.0.1'\nwal_level = replica\nmax_wal_senders = 4\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nshared_buffers = 32MB\n"
                "max_connections = 40\n"
            )
        with open(primary.data / "pg_hba.conf", "a") as hba:
            hba.write("\nhost replication all 127.0.0.1/32 trust\n")
        primary.start()
        started.append(primary)
        _run(
            str(BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", str(replica.data), "-R", "-X", "stream", "--no-sync",
        )  # fmt: skip
        replica.start()
        started.append(replica)
        with primary.connect() as conn:
            conn.execute("CREATE TABLE heartbeat (at timestamptz)")
        yield Pair(primary, replica)
    finally:
        for cluster in reversed(started):
            with contextlib.suppress(RuntimeError):
                cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


class Visitor:
    """One person's browser (its own cookies), or a source's API client (its key)."""

    def __init__(self, base: str, key: str = ""):
        self.base = base
        self.key = key
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def at(self, base: str) -> Visitor:
        """The same visitor (the same cookies, the same key) on another server."""
        other = Visitor(base, self.key)
        other.jar, other.opener = self.jar, self.opener
        return other

    def request(self, method: str, path: str, body: bytes | None = None, **headers: str) -> tuple[int, str]:
        if self.key:
            headers["Authorization"] = f"Api-Key {self.key}"
        # S310: the base is always this test's own http://127.0.0.1 server.
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)  # noqa: S310
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str) -> str:
        status, body = self.request("GET", path)
        assert status == 200, (status, body[:2000])
        return body

    def csrf(self) -> str:
        return next(cookie.value or "" for cookie in self.jar if cookie.name == "csrftoken")

    def post_form(self, path: str, fields: dict[str, str]) -> int:
        body = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": self.csrf()}).encode()
        status, _ = self.request(
            "POST", path, body, **{"Content-Type": "application/x-www-form-urlencoded", "Referer": self.base + path}
        )
        return status

    def sign_in(self, username: str) -> Visitor:
        self.get("/accounts/login/")
        assert self.post_form("/accounts/login/", {"username": username, "password": PASSWORD}) == 200
        assert "Sign out" in self.get("/")
        return self

    def ingest(self, document: dict[str, Any]) -> dict[str, Any]:
        status, body = self.request(
            "POST", "/api/v1/ingest/", json.dumps(document).encode(), **{"Content-Type": "application/json"}
        )
        assert status in (200, 201), (status, body)
        result: dict[str, Any] = json.loads(body)
        return result


@dataclass
class Site:
    pair: Pair
    database: str  # the primary's URL
    server: Server  # sticky window and lag limit of 30 s: the replica serves unless a test makes it lag or stop
    strict: Server  # a lag limit of 1 s
    alice: Visitor
    bob: Visitor
    source: Visitor
    conversation: str  # uuid

    def title_on_the_primary(self) -> str:
        with psycopg.connect(self.database, autocommit=True) as conn:
            row = conn.execute("SELECT title FROM chats_conversation WHERE uuid = %s", [self.conversation]).fetchone()
        assert row is not None
        return str(row[0])

    def retitle(self, title: str) -> None:
        """A change made on the primary behind the application's back."""
        with psycopg.connect(self.database, autocommit=True) as conn:
            conn.execute("UPDATE chats_conversation SET title = %s WHERE uuid = %s", [title, self.conversation])


def _chat(external_id: str, title: str) -> dict[str, Any]:
    return {
        "chat_id": external_id,
        "title": title,
        "main_messages": [
            {"role": "user", "content": "How long should a PCR extension step be?"},
            {"role": "assistant", "content": "About one minute per kilobase of product."},
        ],
    }


# Run in one manage.py process (each start costs seconds on a busy machine): migrate, two reviewers, a source's key.
_SETUP = f"""
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("migrate", verbosity=0)
for name in ("alice", "bob"):
    User.objects.create_user(name, password={PASSWORD!r}).groups.add(Group.objects.get(name="Reviewers"))
call_command("create_source", "replica-logger")
"""


@pytest.fixture(scope="session")
def site(pair: Pair) -> Iterator[Site]:
    with pair.primary.connect() as conn:
        conn.execute("CREATE DATABASE mb_replica")
    env = server_env(pair.primary.url("mb_replica"))
    setup = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", _SETUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert setup.returncode == 0, setup.stderr[-3000:]
    key = setup.stdout.strip().splitlines()[-1]
    env |= {"DATABASE_REPLICA_URL": pair.replica.url("mb_replica")}
    limits = [("30", "30"), ("1", "1")]  # (sticky seconds, lag limit) of each server
    servers: list[Server] = []
    try:
        with ThreadPoolExecutor(len(limits)) as pool:  # both start at once
            started = [
                pool.submit(
                    Server,
                    env | {"MASTERBRAIN_REPLICA_STICKY_SECONDS": sticky, "MASTERBRAIN_REPLICA_MAX_LAG_SECONDS": lag},
                    workers=1,
                )
                for sticky, lag in limits
            ]
            servers = [future.result() for future in started]
        base = f"http://127.0.0.1:{servers[0].port}"
        source = Visitor(base, key)
        conversation = source.ingest(_chat("replica-1", "Extension times"))["conversation"]
        pair.wait_until_replica()
        yield Site(
            pair,
            pair.primary.url("mb_replica"),
            servers[0],
            servers[1],
            Visitor(base).sign_in("alice"),
            Visitor(base).sign_in("bob"),
            source,
            conversation,
        )
    finally:
        for server in servers:
            server.process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown: master and workers, at once
        for server in servers:
            server.process.wait(timeout=30)


def test_lag_tolerant_reads_come_from_the_replica(site: Site) -> None:
    site.pair.sync_and_pause()
    try:
        site.retitle("Retitled on the primary")

        listed = site.bob.get("/conversations/")
        thread = site.bob.get(f"/conversations/{site.conversation}/")
        api = json.loads(site.bob.get(f"/api/v1/conversations/{site.conversation}/"))
        exported = site.bob.get("/api/v1/export/?format=chat_document")  # a streamed body
        # Pages that are not lag-tolerant read the primary.
        queues = site.bob.get("/queues/")
    finally:
        site.pair.resume()

    assert site.title_on_the_primary() == "Retitled on the primary"
    assert "Extension times" in listed and "Retitled on the primary" not in listed
    assert "Extension times" in thread and "Retitled on the primary" not in thread
    assert api["title"] == "Extension times"
    assert "Extension times" in exported and "Retitled on the primary" not in exported
    assert NOTICE not in listed and NOTICE not in queues
    assert "Retitled on the primary" in site.bob.get("/conversations/")  # replayed since


def test_a_writer_reads_their_writes_while_the_replica_has_not_replayed_them(site: Site) -> None:
    note = f"A note by Alice, {uuid.uuid4()}"
    thread = f"/conversations/{site.conversation}/"
    site.pair.sync_and_pause()
    try:
        assert site.alice.post_form(f"{thread}feedback/", {"score": "1", "comment": note}) == 200
        document = _chat(f"replica-{uuid.uuid4()}", "Ingested while paused")
        created = site.source.ingest(document)["conversation"]

        seen_by_alice = site.alice.get(thread)
        seen_by_bob = site.bob.get(thread)
        listed_for_the_key = json.loads(site.source.get("/api/v1/conversations/"))
        listed_for_bob = json.loads(site.bob.get("/api/v1/conversations/"))
    finally:
        site.pair.resume()

    assert note in seen_by_alice and note not in seen_by_bob
    assert created in {row["uuid"] for row in listed_for_the_key["results"]}
    assert created not in {row["uuid"] for row in listed_for_bob["results"]}
    assert NOTICE not in seen_by_alice

    # Once the replica has replayed past her write, Alice reads from it again (well within the 30 s window).
    site.pair.sync_and_pause()
    try:
        site.retitle("Retitled after the replay")
        again = site.alice.get(thread)
    finally:
        site.pair.resume()
    assert note in again and "Retitled after the replay" not in again


def test_a_lagging_replica_leaves_reads_on_the_primary_with_a_notice(site: Site) -> None:
    bob = site.bob.at(f"http://127.0.0.1:{site.strict.port}")
    site.pair.sync_and_pause()
    try:
        site.retitle("Retitled while the replica lags")
        site.pair.wait_until_replica(received=True)
        # The last transaction replayed becomes older than the 1 s the strict server tolerates.
        site.pair.wait_until_lag_exceeds(1.05)

        listed = bob.get("/conversations/")
        thread = bob.get(f"/conversations/{site.conversation}/")
        tolerant = site.bob.get("/conversations/")  # the other server tolerates 30 s: the replica still serves
    finally:
        site.pair.resume()

    assert "Retitled while the replica lags" in listed and NOTICE in listed
    assert "Retitled while the replica lags" in thread and NOTICE in thread
    assert "Retitled while the replica lags" not in tolerant and NOTICE not in tolerant
    assert NOTICE not in bob.get("/conversations/")  # caught up


def test_a_replica_that_is_down_leaves_reads_on_the_primary_with_a_notice(site: Site) -> None:
    site.pair.replica.stop()
    try:
        site.retitle("Retitled while the replica is down")
        listed = site.bob.get("/conversations/")
        thread = site.bob.get(f"/conversations/{site.conversation}/")
        api = json.loads(site.bob.get(f"/api/v1/conversations/{site.conversation}/"))
        exported = site.bob.get("/api/v1/export/?format=chat_document")
        feedback = site.bob.post_form(f"/conversations/{site.conversation}/feedback/", {"score": "-1"})
    finally:
        site.pair.replica.start()
        site.pair.wait_until_replica()

    assert "Retitled while the replica is down" in listed and NOTICE in listed
    assert "Retitled while the replica is down" in thread and NOTICE in thread
    assert api["title"] == "Retitled while the replica is down"
    assert "Retitled while the replica is down" in exported
    assert feedback == 200
    assert NOTICE not in site.bob.get("/conversations/")  # back
