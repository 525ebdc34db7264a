"""The peer measured in the same sitting: Label Studio 1.23.2 on PostgreSQL, fed P5's documents, alternated with us.

    python bench/peers.py [--documents 2000] [--runs 3] [--clients 1,4] [--reads] [--no-ours]
                          [--database-url postgres://postgres@127.0.0.1:5432/postgres]

It installs ``label-studio==1.23.2`` from PyPI into a venv of its own (``var/label-studio-venv``, made once with a
Python that Label Studio supports: 3.12, else 3.11, else 3.13 from pyenv, or ``--python``), creates a database of
its own (``ls_peer``, dropped at the end) and starts Label Studio on it with ``label-studio start`` (Django's threaded
server: what ``pip install label-studio`` gives; the Docker image's uWSGI is not on PyPI) on a free port of
127.0.0.1, with its analytics, Sentry and version check off. Nothing leaves 127.0.0.1 once the venv exists.

Each run then imports P5's documents (``bench.workload.comparison_documents``: chat documents of about 20
OpenAI-style messages with 1-5 KB JSON tool results) as tasks of a ``<Chat>`` project, through
``POST /api/projects/<id>/import``, 500 documents a request, from 1 and from 4 client processes at once, into a
project of its own per run and client count; the rate is the documents' messages over the wall time of every
request answered 201 (Label Studio's Community edition imports synchronously: the answer means the tasks are
stored). Unless ``--no-ours``, each Label Studio import is alternated with our own P5 run on the same documents at
the same client count (gunicorn on a database of its own, ``masterbrain_peers_bench``, as ``bench/run.py`` serves
it), the order swapped every run, and the figures are medians of ``--runs`` runs.

``--reads`` times Label Studio's reads afterwards: the task API of one P5 task, of a 1,000-message task, and the
Data Manager's task list filtered by a word of the messages (its only search: ``ILIKE`` over the task's JSON).

``bench/run.py`` can interleave the peer itself: ``with LabelStudio.started(base_url) as peer:`` then
``peer.ingest_rate(documents, clients)`` (or ``peer_ingest_rate(clients)`` for P5's own documents) between its runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.server import DEFAULT_BASE_URL, database_url, free_port  # noqa: E402

LABEL_STUDIO_VERSION = "1.23.2"
VENV = ROOT / "var" / "label-studio-venv"
DATA_DIR = ROOT / "var" / "label-studio-data"
PEER_DB = "ls_peer"
OURS_DB = "masterbrain_peers_bench"
# Pythons Label Studio 1.23.2 installs and runs on, best first (3.12 is the one this script was proven with).
PYTHON_CANDIDATES = ("3.12", "3.11", "3.13")
PER_REQUEST = 500  # P5: documents a request


def per_request_for(documents: int, clients: list[int]) -> int:
    """P5's bodies: 500 documents, fewer when a small run would leave a client without one (as bench/run.py)."""
    return min(PER_REQUEST, max(documents // max(clients), 1))


STARTUP_SECONDS = 900  # a first start migrates an empty database: minutes on two shared cores
USERNAME = "bench@localhost"

# The labeling configuration: the conversation in Label Studio's Chat tag (from the task's ``messages``), and a
# verdict on it, as a review project would ask.
LABEL_CONFIG = """<View>
  <Chat name="chat" value="$messages" />
  <Choices name="verdict" toName="chat" choice="single">
    <Choice value="Good" />
    <Choice value="Needs work" />
  </Choices>
</View>"""


def task_of(document: dict[str, Any]) -> dict[str, Any]:
    """One P5 chat document as a Label Studio task: the document whole as the task's data, so that the Chat tag
    reads its ``messages`` (OpenAI-style, tool calls and tool results included) and nothing is left out."""
    if not isinstance(document.get("messages"), list):
        raise ValueError("a P5 document has a list of messages")
    return {"data": document}


def message_count(documents: list[dict[str, Any]]) -> int:
    return sum(len(document["messages"]) for document in documents)


def import_bodies(documents: list[dict[str, Any]], *, per_request: int = PER_REQUEST) -> list[bytes]:
    """Import request bodies: JSON arrays of ``per_request`` tasks each."""
    return [
        json.dumps([task_of(d) for d in documents[start : start + per_request]], ensure_ascii=False).encode()
        for start in range(0, len(documents), per_request)
    ]


# --------------------------------------------------------------------------------------------------------------
# The venv


def pick_python() -> str:
    """A Python that Label Studio 1.23.2 supports: pyenv's 3.12, else 3.11, else 3.13."""
    versions = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"
    for wanted in PYTHON_CANDIDATES:
        for candidate in sorted(versions.glob(f"{wanted}.*"), reverse=True):
            if (candidate / "bin" / "python").exists():
                return str(candidate / "bin" / "python")
    for wanted in PYTHON_CANDIDATES:
        found = shutil.which(f"python{wanted}")
        if found:
            return found
    raise RuntimeError(f"no Python {', '.join(PYTHON_CANDIDATES)} found: pass --python")


def installed_version(venv: Path) -> str | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    shown = subprocess.run(
        [str(python), "-m", "pip", "show", "label-studio"], capture_output=True, text=True, check=False
    ).stdout
    for line in shown.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def ensure_venv(venv: Path = VENV, python: str | None = None) -> Path:
    """``venv`` with label-studio==1.23.2 in it (installed from PyPI when missing); its label-studio command."""
    if installed_version(venv) != LABEL_STUDIO_VERSION:
        interpreter = python or pick_python()
        print(f"Installing label-studio=={LABEL_STUDIO_VERSION} into {venv} with {interpreter}", flush=True)
        if not (venv / "bin" / "python").exists():
            subprocess.run([interpreter, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, f"label-studio=={LABEL_STUDIO_VERSION}"], check=True)
    return venv / "bin" / "label-studio"


# --------------------------------------------------------------------------------------------------------------
# HTTP (forked client processes: the bodies are inherited, not sent over a pipe)

_BODIES: list[bytes] = []
_TARGET: dict[str, Any] = {}


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, token: str, body: bytes | None = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Token {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    try:
        payload: Any = json.loads(raw) if raw else None
    except ValueError:
        payload = raw[:500].decode(errors="replace")
    return response.status, payload


def _import_share(indexes: list[int]) -> list[tuple[int, int]]:
    conn = http.client.HTTPConnection("127.0.0.1", _TARGET["port"], timeout=1800)
    out = []
    for index in indexes:
        status, payload = _request(conn, "POST", _TARGET["path"], _TARGET["token"], _BODIES[index])
        if status != 201:
            raise RuntimeError(f"import answered {status}: {str(payload)[:500]}")
        out.append((status, int(payload.get("task_count", 0))))
    conn.close()
    return out


def post_imports(port: int, token: str, path: str, bodies: list[bytes], clients: int) -> tuple[float, int]:
    """Post every body from ``clients`` processes at once: the wall time and the tasks Label Studio counted."""
    _BODIES[:] = bodies
    _TARGET.update(port=port, token=token, path=path)
    shares = [list(range(i, len(bodies), clients)) for i in range(clients)]
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        started = time.perf_counter()
        results = pool.map(_import_share, shares)
        elapsed = time.perf_counter() - started
    return elapsed, sum(count for share in results for _, count in share)


# --------------------------------------------------------------------------------------------------------------
# Label Studio


def _reset_database(base: str, name: str) -> str:
    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return database_url(base, name)


def _drop_database(base: str, name: str) -> None:
    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def label_studio_env(base: str, database: str, data_dir: Path) -> dict[str, str]:
    parts = urlsplit(base)
    harness = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "PYTHONPATH", "VIRTUAL_ENV")
    env = {name: value for name, value in os.environ.items() if name not in harness}
    env.update(
        DJANGO_DB="default",
        POSTGRE_NAME=database,
        POSTGRE_USER=parts.username or "postgres",
        POSTGRE_PASSWORD=parts.password or "",
        POSTGRE_HOST=parts.hostname or "127.0.0.1",
        POSTGRE_PORT=str(parts.port or 5432),
        LABEL_STUDIO_BASE_DATA_DIR=str(data_dir),
        # Nothing leaves 127.0.0.1: no analytics, no error reports, no look for a newer release.
        COLLECT_ANALYTICS="false",
        SENTRY_DSN="",
        FRONTEND_SENTRY_DSN="",
        LATEST_VERSION_CHECK="false",
        LOG_LEVEL="WARNING",
    )
    env["LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN"] = "true"  # the token given to --user-token, in a header
    return env


@dataclass
class LabelStudio:
    """A Label Studio server of our own: ``started()`` installs, starts, and stops it (and drops its database)."""

    port: int
    token: str
    process: subprocess.Popen[bytes]
    log: Path
    projects: list[int] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def started(
        cls, base: str = DEFAULT_BASE_URL, *, database: str = PEER_DB, python: str | None = None
    ) -> Iterator[LabelStudio]:
        if urlsplit(base).hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("runs against a local PostgreSQL only")
        command = ensure_venv(python=python)
        _reset_database(base, database)
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        port = free_port()
        token = secrets.token_hex(20)
        log = DATA_DIR / "server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    str(command),
                    "start",
                    "--no-browser",
                    "--internal-host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--username",
                    USERNAME,
                    "--password",
                    secrets.token_urlsafe(16),
                    "--user-token",
                    token,
                    "--enable-legacy-api-token",
                    "--log-level",
                    "WARNING",
                ],
                cwd=DATA_DIR,
                env=label_studio_env(base, database, DATA_DIR),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        peer = cls(port, token, process, log)
        try:
            peer.wait_until_answering()
            yield peer
        finally:
            peer.stop()
            _drop_database(base, database)

    def wait_until_answering(self) -> None:
        """Until the API answers with our token (migrations first): the server's own readiness, not a delay."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"label-studio exited with {self.process.returncode}:\n{self.tail()}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _ = self.call("GET", "/api/projects/")
                if status == 200:
                    return
                if status in (401, 403):
                    raise RuntimeError(f"label-studio refused the token ({status}):\n{self.tail()}")
            time.sleep(0.5)
        raise RuntimeError(f"label-studio did not answer within {STARTUP_SECONDS} s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def call(self, method: str, path: str, payload: Any = None, timeout: float = 600) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            body = None if payload is None else json.dumps(payload).encode()
            return _request(conn, method, path, self.token, body)
        finally:
            conn.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)

    def create_project(self, title: str) -> int:
        status, payload = self.call("POST", "/api/projects/", {"title": title, "label_config": LABEL_CONFIG})
        if status != 201:
            raise RuntimeError(f"project creation answered {status}: {payload}")
        project = int(payload["id"])
        self.projects.append(project)
        return project

    def ingest_rate(
        self, documents: list[dict[str, Any]], clients: int, *, per_request: int = PER_REQUEST
    ) -> tuple[float, str]:
        """Import ``documents`` into a new project from ``clients`` processes: (messages per second, a summary)."""
        project = self.create_project(f"P5 {len(self.projects) + 1}, {clients} clients")
        bodies = import_bodies(documents, per_request=per_request)
        elapsed, tasks = post_imports(self.port, self.token, f"/api/projects/{project}/import", bodies, clients)
        if tasks != len(documents):
            raise RuntimeError(f"Label Studio counted {tasks} tasks for {len(documents)} documents")
        messages = message_count(documents)
        return messages / elapsed, f"{messages:,} messages ({tasks:,} tasks) in {elapsed:.2f} s"

    def timed_get(self, path: str, repeats: int) -> list[float]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        times = []
        try:
            for _ in range(repeats):
                started = time.perf_counter()
                status, _ = _request(conn, "GET", path, self.token)
                times.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"GET {path} answered {status}")
        finally:
            conn.close()
        return times


class Side(Protocol):
    def ingest_rate(
        self, documents: list[dict[str, Any]], clients: int, *, per_request: int = PER_REQUEST
    ) -> tuple[float, str]: ...


def p5_documents(count: int, run: int) -> list[dict[str, Any]]:
    """P5's documents of run ``run`` (bench/run.py's seeds: seed 55 + run, numbered from run x 1,000,000)."""
    from bench.workload import comparison_documents

    return comparison_documents(count, seed=55 + run, first_index=run * 1_000_000)


_PEER: list[LabelStudio] = []


def peer_ingest_rate(clients: int, *, documents: int = 2000, run: int = 0) -> float:
    """Label Studio's msgs/s on P5's documents of ``run`` at ``clients`` clients, on a server started on first use
    (stopped at exit): the hook for bench/run.py to interleave with its own P5 runs."""
    if not _PEER:
        manager = LabelStudio.started(os.environ.get("BENCH_DATABASE_URL", DEFAULT_BASE_URL))
        _PEER.append(manager.__enter__())
        import atexit

        atexit.register(manager.__exit__, None, None, None)
    rate, _ = _PEER[0].ingest_rate(p5_documents(documents, run), clients)
    return rate


# --------------------------------------------------------------------------------------------------------------
# Our side: bench/run.py's P5 on the same documents


class Ours:
    """Our application as bench/run.py serves it for P5: gunicorn (a worker per core) on a database of its own."""

    def __init__(self, base: str, name: str):
        from bench.server import Database, Server

        self.db = Database(base, name)
        self.db.env.pop("CELERY_BROKER_URL", None)  # no broker: the default configuration runs its tasks inline
        self.server = Server(self.db.env, os.cpu_count() or 1)
        self.sources = 0

    def ingest_rate(
        self, documents: list[dict[str, Any]], clients: int, *, per_request: int = PER_REQUEST
    ) -> tuple[float, str]:
        from bench.run import messages_of, post_bodies
        from bench.workload import ndjson_bodies

        self.sources += 1
        name = f"peers-{self.sources}"
        key = self.db.create_source(name)
        with self.db.connect() as conn:
            row = conn.execute("SELECT id FROM chats_source WHERE name = %s", [name]).fetchone()
        assert row is not None
        elapsed, totals = post_bodies(self.server.port, key, ndjson_bodies(documents, per_body=per_request), clients)
        with self.db.connect() as conn:
            stored = messages_of(conn, int(row[0]))
            # Search-ready when acknowledged: every message stored has its vector (built by the statement that
            # stored it), so a search finds every conversation as soon as the last answer is in.
            waiting = conn.execute(
                "SELECT count(*) FROM chats_message m JOIN chats_conversation c ON c.id = m.conversation_id "
                "WHERE c.source_id = %s AND m.search_vector IS NULL",
                [row[0]],
            ).fetchone()
        return stored / elapsed, (
            f"{stored:,} messages ({totals.get('created', 0):,} created) in {elapsed:.2f} s, "
            f"{waiting[0] if waiting else '?'} messages without a search vector after the last answer"
        )

    def close(self) -> None:
        self.server.stop()
        self.db.drop()


# --------------------------------------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def reads(peer: LabelStudio, project: int, repeats: int) -> list[tuple[str, str]]:
    """Label Studio's reads: the task API of a P5 task and of a 1,000-message task, and its Data Manager's search."""
    from bench.workload import long_thread

    def line(times: list[float]) -> str:
        return (
            f"p50 {statistics.median(times) * 1000:.1f} ms, p95 {_pct(times, 0.95) * 1000:.1f} ms ({len(times)} reads)"
        )

    status, listed = peer.call("GET", f"/api/tasks/?project={project}&page_size=1")
    if status != 200:
        raise RuntimeError(f"task list answered {status}")
    task_id = int(listed["tasks"][0]["id"])
    task_messages = len(listed["tasks"][0]["data"]["messages"])
    long = long_thread(1000, seed=5)
    long_messages = long["scenario_messages"] + long["main_messages"]
    long_project = peer.create_project("A 1,000-message thread")
    status, payload = peer.call(
        "POST",
        f"/api/projects/{long_project}/import?return_task_ids=true",
        [task_of({"chat_id": long["chat_id"], "model": long["model"], "messages": long_messages})],
    )
    if status != 201:
        raise RuntimeError(f"import answered {status}: {payload}")
    long_id = int(payload["task_ids"][0])
    total = int(listed.get("total", 0))
    word = "nonspecific"  # in the PCR topic's question: a fraction of the conversations
    query = {
        "filters": {
            "conjunction": "and",
            "items": [
                {"filter": "filter:tasks:data.messages", "operator": "contains", "type": "String", "value": word}
            ],
        }
    }
    search = f"/api/tasks/?project={project}&page_size=30&query={quote(json.dumps(query))}"
    status, found = peer.call("GET", search)
    if status != 200:
        raise RuntimeError(f"search answered {status}: {found}")
    return [
        (f"task API, {task_messages} messages", line(peer.timed_get(f"/api/tasks/{task_id}/", repeats))),
        (f"task API, {len(long_messages):,} messages", line(peer.timed_get(f"/api/tasks/{long_id}/", repeats))),
        (
            f"task list filtered by {word!r} over {total:,} tasks ({found.get('total', '?')} found)",
            line(peer.timed_get(search, repeats)),
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--documents", type=int, default=2000, help="P5 documents a run (2,000 as in bench/run.py)")
    parser.add_argument("--runs", type=int, default=3, help="runs per client count; the figures are their medians")
    parser.add_argument("--clients", default="1,4", help="comma-separated client counts")
    parser.add_argument("--no-ours", action="store_true", help="Label Studio alone, without our P5 runs between")
    parser.add_argument("--ours-database-name", default=OURS_DB)
    parser.add_argument("--peer-database-name", default=PEER_DB)
    parser.add_argument("--reads", action="store_true", help="also time Label Studio's reads")
    parser.add_argument("--read-repeats", type=int, default=20)
    parser.add_argument("--python", help="the Python for Label Studio's venv (default: pyenv's 3.12, 3.11 or 3.13)")
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    for name in (args.ours_database_name, args.peer_database_name):
        if not name.replace("_", "").isalnum() or not name.islower():
            parser.error(f"{name!r}: a plain lower-case database name (it is dropped at the end)")

    per_request = per_request_for(args.documents, clients)
    started = time.perf_counter()
    rates: dict[tuple[str, int], list[float]] = {}
    lines: list[str] = []
    ours: Ours | None = None
    with LabelStudio.started(args.database_url, database=args.peer_database_name, python=args.python) as peer:
        print(f"Label Studio {LABEL_STUDIO_VERSION} answering on 127.0.0.1:{peer.port}", flush=True)
        try:
            if not args.no_ours:
                ours = Ours(args.database_url, args.ours_database_name)
            warm = p5_documents(2, 99)
            peer.ingest_rate(warm, 1)
            if ours is not None:
                ours.ingest_rate(warm, 1)
            for run in range(args.runs):
                docs = p5_documents(args.documents, run)
                for count in clients:
                    sides: list[tuple[str, Side]] = [("Label Studio", peer)]
                    if ours is not None:
                        sides.insert(0 if run % 2 == 0 else 1, ("ours", ours))
                    for side, target in sides:
                        rate, summary = target.ingest_rate(docs, count, per_request=per_request)
                        rates.setdefault((side, count), []).append(rate)
                        lines.append(f"run {run + 1}, {count} client(s), {side}: {rate:,.0f} msgs/s, {summary}")
                        print(lines[-1], flush=True)
            read_rows = reads(peer, peer.projects[-1], args.read_repeats) if args.reads else []
        finally:
            if ours is not None:
                ours.close()

    print()
    print(
        f"P5 against Label Studio {LABEL_STUDIO_VERSION} on PostgreSQL, {args.documents:,} documents a run, "
        f"{per_request} a request, medians of {args.runs} alternated run(s); ours in the default configuration "
        f"(no broker), search-ready when acknowledged; {time.perf_counter() - started:.0f} s in all"
    )
    for count in clients:
        peer_rates = rates[("Label Studio", count)]
        row = f"{count} client(s): Label Studio {statistics.median(peer_rates):,.0f} msgs/s ({', '.join(f'{r:,.0f}' for r in peer_rates)})"
        if ("ours", count) in rates:
            our_rates = rates[("ours", count)]
            row += (
                f"; ours {statistics.median(our_rates):,.0f} msgs/s ({', '.join(f'{r:,.0f}' for r in our_rates)}): "
                f"{statistics.median(our_rates) / statistics.median(peer_rates):.2f}x"
            )
        print(row)
    for label, figure in read_rows:
        print(f"Label Studio read, {label}: {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
