"""A throwaway PostgreSQL database served by gunicorn on 127.0.0.1, for the load run and the fault tests.

The database is created, migrated with ``manage.py migrate`` and given a source with a key; the server runs the
production settings (``DEBUG`` off) with the ingest throttle lifted, so that only the application is measured.
Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Database:
    """A database of its own on the server of ``base``, migrated, with one source and its key; dropped by drop()."""

    def __init__(self, base: str, name: str):
        if urlsplit(base).hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("runs against a local PostgreSQL only")
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"{name!r}: a plain lower-case name, since it is dropped at the end")
        self.base = base
        self.name = name
        self.url = database_url(base, name)
        self.port = urlsplit(base).port or 5432
        with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        self.env = server_env(self.url)
        self.manage("migrate", "--verbosity", "0")

    def manage(self, *args: str) -> str:
        completed = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{completed.stderr[-3000:]}")
        return completed.stdout

    def create_source(self, name: str) -> str:
        """A new key for the source ``name`` (created if needed)."""
        return self.manage("create_source", name).strip().splitlines()[-1]

    def connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(self.url, autocommit=True)

    def drop(self) -> None:
        with psycopg.connect(database_url(self.base, "postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def server_env(url: str) -> dict[str, str]:
    # The throwaway database has no replica: a DATABASE_REPLICA_URL of the environment is not its.
    harness = ("PYTEST_VERSION", "DATABASE_URL", "DATABASE_REPLICA_URL")
    env = {name: value for name, value in os.environ.items() if name not in harness}
    env.update(
        DATABASE_URL=url,
        DEBUG="0",
        SECRET_KEY="benchmark-load-and-fault-tests-only-not-secret-" + "x" * 40,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_COOKIES="0",
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        MASTERBRAIN_THROTTLE_INGEST="1000000/min",
        DJANGO_SETTINGS_MODULE="masterbrain_site.settings",
    )
    return env


# The access log's lines, when one is asked for: status, method and path (no query string), one request a line.
ACCESS_LOG_FORMAT = "%(s)s %(m)s %(U)s"


class Server:
    """gunicorn (sync workers) on a free port of 127.0.0.1; stop() ends it. With ``access_log``, gunicorn writes a
    line per request there (ACCESS_LOG_FORMAT)."""

    def __init__(self, env: dict[str, str], workers: int, *, timeout: int = 600, access_log: Path | None = None):
        self.port = free_port()
        logging = ["--access-logfile", str(access_log), "--access-logformat", ACCESS_LOG_FORMAT] if access_log else []
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "masterbrain_site.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--timeout",
                str(timeout),
                "--log-level",
                "warning",
                *logging,
            ],
            cwd=ROOT,
            env=env,
        )
        self.worker_count = workers
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/accounts/login/")
                conn.getresponse().read()
                conn.close()
                if len(self.workers()) == workers:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("gunicorn did not start")

    def workers(self) -> list[int]:
        """The worker processes: the children of the gunicorn master."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        with contextlib.suppress(OSError):
            return [int(pid) for pid in children.read_text().split()]
        return []

    def worker_serving(self, client_port: int) -> int | None:
        """The worker holding the server end of the connection whose client side is 127.0.0.1:``client_port``."""
        ends = {inode for local, remote, inode in tcp_connections() if local == self.port and remote == client_port}
        for pid in self.workers():
            if ends & socket_inodes(pid):
                return pid
        return None

    def wait_for_workers(self, *, without: int, timeout: float = 60) -> list[int]:
        """Wait until the master has replaced the worker ``without``; the workers then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            workers = self.workers()
            if len(workers) == self.worker_count and without not in workers:
                return workers
            time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not replace worker {without}: workers are {self.workers()}")

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Worker:
    """`celery -A masterbrain_site worker`, in a process group of its own: the solo pool, or with ``concurrency``
    the prefork pool of that many processes (`make worker`'s)."""

    def __init__(self, env: dict[str, str], name: str, *, concurrency: int = 0):
        pool = ["--pool=prefork", f"--concurrency={concurrency}"] if concurrency else ["--pool=solo", "--concurrency=1"]
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "celery"),
                "-A",
                "masterbrain_site",
                "worker",
                *pool,
                "--loglevel=warning",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--hostname",
                f"{name}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,  # the banner; warnings and errors go to stderr
            start_new_session=True,  # its own process group, which kill() ends whole
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


def tcp_connections() -> list[tuple[int, int, str]]:
    """(local port, remote port, socket inode) of every IPv4 TCP socket of this machine's network namespace."""
    out = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] != "0":  # 0: not held by a process (yet), e.g. waiting in the listen backlog
            out.append((int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16), fields[9]))
    return out


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process ``pid`` holds open."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def database_client_ports(pid: int, database_port: int) -> list[int]:
    """The local ports of process ``pid``'s connections to the database: pg_stat_activity.client_port names them."""
    inodes = socket_inodes(pid)
    return [local for local, remote, inode in tcp_connections() if remote == database_port and inode in inodes]
