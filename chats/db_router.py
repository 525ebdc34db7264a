"""Which database a query goes to: the primary, or the read replica (``DATABASE_REPLICA_URL``) for the reads that
tolerate lag. The whole rule is here (docs/SCALING.md):

- a read goes to the replica when the request is a GET or HEAD of a view marked ``@replica_lag_tolerated`` (the
  conversation list and search, a thread, the artifact pages, the read API and the exports), the model is one of
  ``REPLICA_MODELS`` (the conversations' content, feedback, receipts), no transaction is open on the primary, and
  ``route`` lets it: the replica answers, lags no more than ``MASTERBRAIN_REPLICA_MAX_LAG_SECONDS``, and has
  replayed the reader's own latest write;
- everything else reads the primary: sign-in, sessions, people, keys and sources, the admin, review queues, the
  audit log, and every read of a request that is not a lag-tolerant page;
- every write goes to the primary. A request that wrote one of ``REPLICA_MODELS`` leaves, for
  ``MASTERBRAIN_REPLICA_STICKY_SECONDS``, the primary's WAL insert position in the cache under its reader (its API
  key, or its session): that reader's lag-tolerant reads stay on the primary until the replica has replayed past it.

Without a replica configured nothing here runs a query: every read and write goes to ``default``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import cast

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, Error, connections
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

logger = logging.getLogger(__name__)

REPLICA = "replica"

# The attribute that marks a view whose GET answers may be a moment old (see replica_lag_tolerated).
LAG_TOLERATED = "replica_lag_tolerated"


def replica_lag_tolerated[ViewT: Callable[..., object] | type](view: ViewT) -> ViewT:
    """Declares that a view's GET (and HEAD) answers may be a moment old, so that its reads of ``REPLICA_MODELS`` may
    come from the replica: a view function (outermost, above its other decorators), or a class-based view (an
    APIView or a ViewSet: every GET it answers). Pages and API reads of conversations and artifacts, and the exports,
    are; review queues, feedback forms, the dashboard and the audit section are not."""
    setattr(view, LAG_TOLERATED, True)
    return view


def lag_tolerated(view: Callable[..., object]) -> bool:
    """Whether the view a URL resolved to (a function, or what a class's as_view() made) is marked as tolerating lag."""
    view_class = getattr(view, "view_class", None) or getattr(view, "cls", None)
    return bool(getattr(view, LAG_TOLERATED, False) or getattr(view_class, LAG_TOLERATED, False))


# The models those reads take from the replica: what was ingested and the feedback on it. Keys, sources and
# quotas (who may do what, decided on the primary), the audit log, the read audit's views and the review models
# are always read from the primary. Writing one of these makes its writer read their writes.
REPLICA_MODELS = frozenset(
    {
        "chats.conversation",
        "chats.message",
        "chats.toolcall",
        "chats.injectedartifact",
        "chats.contextartifactid",
        "chats.label",
        "chats.feedback",
        "chats.feedbacklabel",
        "chats.ingestionreceipt",
        "chats.receiptpayload",
    }
)

_LAG_SQL = """
SELECT
    CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text,
    CASE
        WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
        ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 1e9)
    END::float8
"""


@dataclass
class _Routing:
    """This request's decision, and whether it wrote (set by the router's db_for_write)."""

    read_alias: str = DEFAULT_DB_ALIAS
    primary_fallback: bool = False
    wrote: bool = False


_current: ContextVar[_Routing | None] = ContextVar("masterbrain_read_routing", default=None)


@dataclass(frozen=True)
class ReplicaPosition:
    """What the replica has replayed (a WAL position as a number), and how far behind the primary it is."""

    replayed: int
    lag_seconds: float


@dataclass(frozen=True)
class Route:
    alias: str
    primary_fallback: bool  # the replica is down or lagging: the page says its reads come from the primary


def replica_configured() -> bool:
    return REPLICA in connections.settings


def lsn(text: str) -> int:
    """A PostgreSQL WAL position ("16/B374D848") as a number that orders as positions do."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def route(replica: ReplicaPosition | None, written: int | None, *, max_lag_seconds: float) -> Route:
    """Where a lag-tolerant read goes: ``replica`` is None when the replica did not answer, ``written`` the WAL
    position of the reader's latest write still remembered (None: none)."""
    if replica is None or replica.lag_seconds > max_lag_seconds:
        return Route(DEFAULT_DB_ALIAS, primary_fallback=True)
    if written is not None and replica.replayed < written:
        return Route(DEFAULT_DB_ALIAS, primary_fallback=False)
    return Route(REPLICA, primary_fallback=False)


def reads_from_primary_fallback() -> bool:
    """Whether this request's lag-tolerant reads fell back to the primary (the base layout's notice)."""
    state = _current.get()
    return state is not None and state.primary_fallback


def _in_primary_transaction() -> bool:
    """Reads inside a transaction on the primary stay on it: they belong with what it has written or locked."""
    return connections[DEFAULT_DB_ALIAS].in_atomic_block


class ReplicaRouter:
    """settings.DATABASE_ROUTERS: reads as ``ReadRoutingMiddleware`` decided for the request, writes to the primary,
    migrations never on the replica."""

    def db_for_read(self, model: type[Model], **hints: object) -> str:
        state = _current.get()
        if (
            state is None
            or state.read_alias == DEFAULT_DB_ALIAS
            or model._meta.label_lower not in REPLICA_MODELS
            or _in_primary_transaction()
        ):
            return DEFAULT_DB_ALIAS
        return state.read_alias

    def db_for_write(self, model: type[Model], **hints: object) -> str:
        state = _current.get()
        if state is not None and model._meta.label_lower in REPLICA_MODELS:
            state.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Model, obj2: Model, **hints: object) -> bool:
        return True  # the replica holds the primary's rows: an object read from either relates to any other

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: object) -> bool:
        return db != REPLICA


def reader_key(*, api_key: str = "", session: str = "") -> str | None:
    """The cache key of a reader's latest write: a digest of the API key they send, else of their session."""
    if api_key:
        credential = f"key:{api_key}"
    elif session:
        credential = f"session:{session}"
    else:
        return None
    return "replica-written:" + hashlib.sha256(credential.encode()).hexdigest()


def _reader(request: HttpRequest) -> str | None:
    """Who reads and writes, without a query."""
    scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return reader_key(
        api_key=key.strip() if scheme.lower() == "api-key" else "",
        session=request.COOKIES.get(settings.SESSION_COOKIE_NAME, ""),
    )


def _replica_position() -> ReplicaPosition | None:
    """One query to the replica; None when it does not answer."""
    replica = connections[REPLICA]
    try:
        with replica.cursor() as cursor:
            cursor.execute(_LAG_SQL)
            replayed, lag = cursor.fetchone()
    except Error as error:
        logger.warning("the read replica does not answer, reads go to the primary: %s", error)
        with contextlib.suppress(Error):
            replica.close()
        return None
    if replayed is None:  # a standby that has replayed nothing yet
        return None
    return ReplicaPosition(replayed=lsn(replayed), lag_seconds=float(lag))


def _remember_write(reader: str) -> None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        # The insert position: past the commit just made even when it is not yet written out (synchronous_commit
        # off), where pg_current_wal_lsn() could still be before it.
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        (position,) = cursor.fetchone()
    cache.set(reader, lsn(position), timeout=settings.MASTERBRAIN_REPLICA_STICKY_SECONDS)


def _within[T](state: _Routing, chunks: Iterable[T]) -> Iterator[T]:
    """A streamed body, each chunk produced under its request's routing (the body is read after the view)."""
    iterator = iter(chunks)
    while True:
        token = _current.set(state)
        try:
            chunk = next(iterator)
        except StopIteration:
            return
        finally:
            _current.reset(token)
        yield chunk


class ReadRoutingMiddleware:
    """Decides, per request, where its lag-tolerant reads go, and remembers the writes of those who wrote."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not replica_configured():
            return self.get_response(request)
        state = _Routing()
        token = _current.set(state)
        try:
            response = self.get_response(request)
            reader = _reader(request)
            if state.wrote and reader is not None:
                _remember_write(reader)
        finally:
            _current.reset(token)
        if isinstance(response, StreamingHttpResponse) and not response.is_async:
            response.streaming_content = _within(state, cast(Iterator[bytes], response.streaming_content))
        return response

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., HttpResponse],
        args: tuple[object, ...],
        kwargs: dict[str, object],
    ) -> HttpResponse | None:
        state = _current.get()
        if (
            state is None
            or request.method not in ("GET", "HEAD")
            or not lag_tolerated(view)
            or _in_primary_transaction()
        ):
            return None
        reader = _reader(request)
        written = cache.get(reader) if reader is not None else None
        decided = route(_replica_position(), written, max_lag_seconds=settings.MASTERBRAIN_REPLICA_MAX_LAG_SECONDS)
        state.read_alias, state.primary_fallback = decided.alias, decided.primary_fallback
        return None
