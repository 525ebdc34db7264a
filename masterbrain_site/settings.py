"""The one settings module. Production differs from a laptop only by environment variables (see .env.example)."""

from __future__ import annotations

import os
import secrets
import string
from datetime import timedelta
from pathlib import Path

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from masterbrain_site.env import (
    env_bool,
    env_hosts,
    env_int,
    env_int_renamed,
    env_list,
    env_networks,
    env_rate,
    env_str,
    parse_database_url,
)

# Django's generic classes (ModelAdmin[Model], ModelForm[Model]) subscriptable at run time, as their type hints are.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MASTERBRAIN_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", default=False)
# pytest sets PYTEST_VERSION: the test run may use the generated local key like a local run does.
_LOCAL_RUN = DEBUG or "PYTEST_VERSION" in os.environ


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not _LOCAL_RUN:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off.")
    key_file = VAR_DIR / "secret_key"
    if key_file.exists():
        return key_file.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    key_file.write_text(key)
    key_file.chmod(0o600)
    return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"] if _LOCAL_RUN else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "chats",
]

MIDDLEWARE = [
    # First: every response (an error from any middleware below included) carries the request's id.
    "chats.middleware.RequestIdMiddleware",
    # Under /api/ every error answers the API's {"errors": [...]} shape, whoever answered it.
    "chats.middleware.ApiErrorShapeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "chats.middleware.RejectNulCharacterMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Where a request's lag-tolerant reads go (the read replica, when there is one): see the Read replica block.
    "chats.db_router.ReadRoutingMiddleware",
    "chats.middleware.DomainErrorMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in's answer into a 429 (see the Sign-in block).
    "axes.middleware.AxesMiddleware",
]

# django-axes first: it refuses a locked-out sign-in before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "masterbrain_site.urls"
WSGI_APPLICATION = "masterbrain_site.wsgi.application"

TEMPLATES = [
    {
        # Django's own apps: the admin (with its overrides in templates/admin/), the API's browsable pages.
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
    {
        # The application's pages and htmx fragments, the sign-in page included: see chats/jinja2.py.
        "NAME": "jinja2",
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {
            "environment": "chats.jinja2.environment",
            # What the Django engine's processors give its templates; request, csrf_input and csrf_token the
            # backend adds by itself.
            "context_processors": [
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
if _database_url:
    DATABASES = {"default": parse_database_url("DATABASE_URL", _database_url)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3"}}
IS_POSTGRES = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"

# --- Read replica -------------------------------------------------------------------------------------------------
# DATABASE_REPLICA_URL names a PostgreSQL streaming replica of DATABASE_URL (optional). The reads that tolerate lag
# (conversation list and search, threads, artifact pages and API, exports) go to it; everything else, and every
# write, to the primary (chats/db_router.py, docs/SCALING.md). After a person or key writes, their reads stay on the
# primary until the replica has replayed the write, for at most MASTERBRAIN_REPLICA_STICKY_SECONDS; a replica that
# does not answer, or lags more than MASTERBRAIN_REPLICA_MAX_LAG_SECONDS, sends every read to the primary (the pages
# say so). The sticky window must cover the largest lag tolerated, or a writer could read past their own write.
# With several processes, REDIS_URL shares the writes remembered. In tests the replica is a mirror of default.
MASTERBRAIN_REPLICA_STICKY_SECONDS = env_int("MASTERBRAIN_REPLICA_STICKY_SECONDS", 5, minimum=1)
MASTERBRAIN_REPLICA_MAX_LAG_SECONDS = env_int("MASTERBRAIN_REPLICA_MAX_LAG_SECONDS", 5, minimum=0)
if MASTERBRAIN_REPLICA_STICKY_SECONDS < MASTERBRAIN_REPLICA_MAX_LAG_SECONDS:
    raise ImproperlyConfigured(
        "MASTERBRAIN_REPLICA_STICKY_SECONDS must be at least MASTERBRAIN_REPLICA_MAX_LAG_SECONDS: a reader must stay "
        "on the primary after a write for as long as the replica may lag."
    )
if _replica_url := env_str("DATABASE_REPLICA_URL"):
    _replica = parse_database_url("DATABASE_REPLICA_URL", _replica_url)
    if not IS_POSTGRES or _replica["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URL needs PostgreSQL, for it and for DATABASE_URL.")
    # A replica that does not answer is given up on quickly: the reads then go to the primary.
    _replica["OPTIONS"].setdefault("connect_timeout", "2")
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES["replica"] = _replica
DATABASE_ROUTERS = ["chats.db_router.ReplicaRouter"]
# --- end of Read replica ------------------------------------------------------------------------------------------
if not IS_POSTGRES:
    # SQLite serves runserver's threads at once: WAL lets readers go on beside a writer, and a write transaction
    # takes its lock when it begins (waiting up to 20 s) rather than failing midway.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Nothing is uploaded: media get a prefix of their own all the same, so that no server that serves media (Django's
# test server serves MEDIA_URL, which defaults to every path) takes a page's URL for a file's.
MEDIA_URL = "media/"
MEDIA_ROOT = VAR_DIR / "media"
# Local runs and tests serve static files straight from static/ and the apps; production runs collectstatic.
WHITENOISE_USE_FINDERS = _LOCAL_RUN
WHITENOISE_AUTOREFRESH = DEBUG
# Files a browser asks for at the site's root (/favicon.ico), served as they are.
WHITENOISE_ROOT = BASE_DIR / "static" / "root"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chats:home"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=not _LOCAL_RUN)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# HTTPS only in production: redirect plain HTTP and tell browsers to remember it (HSTS). Behind a proxy that
# terminates TLS, SECURE_PROXY_SSL_HEADER names the header that carries the original scheme.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not _LOCAL_RUN)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if _LOCAL_RUN else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
# Preloading commits the whole registered domain (subdomains included) to HTTPS in every browser, for months:
# the domain's owner opts in with SECURE_HSTS_PRELOAD, so the deployment check does not warn when it is off.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
if _proxy_ssl_header := env_str("SECURE_PROXY_SSL_HEADER"):
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https")

# --- Images -----------------------------------------------------------------------------------------------------
# An image or audio URL in a conversation was written by a model or a tool: loading it would tell its host each
# reviewer's address and when they opened the thread. Pages load only data: URIs and https URLs of these hosts
# (comma-separated host names; none by default), and the CSP below allows nothing else. Any other image shows as a
# button naming its host, which opens it in a new tab (chats/remote_media.py decides; docs/SECURITY.md, "Images").
MASTERBRAIN_TRUSTED_IMAGE_HOSTS = env_hosts("MASTERBRAIN_TRUSTED_IMAGE_HOSTS")
_MEDIA_SOURCES = [CSP.SELF, "data:", *(f"https://{host}" for host in MASTERBRAIN_TRUSTED_IMAGE_HOSTS)]
# --- end of Images ----------------------------------------------------------------------------------------------

# Model output is untrusted: no inline script, no foreign script, images and audio as the Images block says.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": _MEDIA_SOURCES,
    "media-src": _MEDIA_SOURCES,
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

# The shared cache holds the throttles' counters: Redis when REDIS_URL is set (shared by every worker and host),
# else this process's memory (each worker then counts on its own).
if _redis_url := env_str("REDIS_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _redis_url}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Throttles. Ingest: requests per API key (a DRF rate, "600/min"). Sign-in: see the Sign-in block below.
# Background work runs on Celery workers (`make worker`) when CELERY_BROKER_URL names a broker (Redis, or RabbitMQ
# with amqp://). Without one, as in `make run` and the tests, every task runs inline in the process that sends it,
# through the same code. Tasks keep their state in the database (an asynchronous ingest's receipts): no result
# backend. Why a task whose worker dies is run again (tests/reliability/test_celery_worker_killed.py kills one):
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# - acknowledged only once it has finished: a worker killed mid-task has not acknowledged it, and the broker keeps
#   it (Redis: in its set of unacknowledged messages, with the time it was handed out);
CELERY_TASK_ACKS_LATE = True
# - with the prefork pool, a pool process that dies while the worker lives (the out-of-memory killer) has its
#   task put back on the queue at once, rather than acknowledged as failed;
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# - a worker holds one unacknowledged task at a time: a dead worker takes no other task down with it, and no task
#   waits behind a long one on a busy worker;
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# - Redis hands a task that has stayed unacknowledged for longer than the visibility timeout out again (a worker
#   sweeps for them as it starts and every few minutes): that is how a task of a worker that died, machine and
#   all, comes back. It must be longer than any task runs, or a task still running is handed out a second time
#   (the tasks are idempotent, so that costs work, not correctness).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Full-text search indexes the first this-many characters of each message (the message is stored whole), in the
# statement that stores it (chats.search_schema): a new value applies to messages stored after the next migrate.
MASTERBRAIN_SEARCH_MESSAGE_CHARS = env_int("MASTERBRAIN_SEARCH_MESSAGE_CHARS", 20_000, minimum=100)
if MASTERBRAIN_SEARCH_MESSAGE_CHARS > 1_000_000:  # a tsvector holds at most 1 MB
    raise ImproperlyConfigured("MASTERBRAIN_SEARCH_MESSAGE_CHARS must be at most 1000000.")
# Removed when vectors came to be built as rows are written: nothing builds them afterwards, so nothing is chosen.
if env_str("MASTERBRAIN_SEARCH_INDEXER"):
    raise ImproperlyConfigured(
        "MASTERBRAIN_SEARCH_INDEXER is no longer read: search vectors are built as messages are stored, and "
        "manage.py index_search is gone. Remove it from the environment."
    )

MASTERBRAIN_THROTTLE_INGEST = env_rate("MASTERBRAIN_THROTTLE_INGEST", "600/min")

# ---- Sign-in -------------------------------------------------------------------------------------------------
# django-axes counts failed sign-ins, on the site's page and the admin's, per user name AND client address
# together: MASTERBRAIN_LOGIN_FAILURES failures lock that name from that address (429) until
# MASTERBRAIN_LOGIN_WINDOW_SECONDS have passed since the last one; the name stays usable from anywhere else. Names
# count case-insensitively and trimmed. Attempts are rows in the database, shared by every worker; staff see them
# in the admin and unlock a name there (audited). The client address is the connecting peer's; X-Forwarded-For is
# read only when that peer is one of MASTERBRAIN_TRUSTED_PROXIES (comma-separated addresses or CIDR networks; none
# by default). The policy's hooks are in chats/throttling.py.
MASTERBRAIN_TRUSTED_PROXIES = env_networks("MASTERBRAIN_TRUSTED_PROXIES")
MASTERBRAIN_LOGIN_FAILURES = env_int("MASTERBRAIN_LOGIN_FAILURES", 5, minimum=1)
MASTERBRAIN_LOGIN_WINDOW_SECONDS = env_int("MASTERBRAIN_LOGIN_WINDOW_SECONDS", 15 * 60, minimum=1)
for _removed in ("MASTERBRAIN_LOGIN_FAILURES_PER_USER", "MASTERBRAIN_LOGIN_FAILURES_PER_ADDRESS"):
    if env_str(_removed):
        raise ImproperlyConfigured(
            f"{_removed} is no longer read: failed sign-ins count per user name and address together, "
            "up to MASTERBRAIN_LOGIN_FAILURES."
        )
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = MASTERBRAIN_LOGIN_FAILURES
AXES_COOLOFF_TIME = timedelta(seconds=MASTERBRAIN_LOGIN_WINDOW_SECONDS)
AXES_USERNAME_CALLABLE = "chats.throttling.sign_in_username"
AXES_CLIENT_IP_CALLABLE = "chats.throttling.client_address"
AXES_LOCKOUT_CALLABLE = "chats.throttling.sign_in_locked_response"
AXES_COOLOFF_MESSAGE = "Too many failed sign-in attempts for this account from this address. Try again later."
# A correct password clears the name's count from that address; attempts made while locked are not counted, so
# they do not extend the lock.
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Failed attempts only: successful sign-ins are not logged. django-axes' own admin is off: the attempts' admin is
# chats/admin/signin.py.
AXES_DISABLE_ACCESS_LOG = True
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False  # no start-up banner on every command; failures and lockouts are still logged

# The team's tracing UI: a message that is a model call's output (an OpenTelemetry span, POST /api/v1/otel/v1/traces)
# links to its span there. A URL with {trace_id} and, optionally, {span_id}
# ("https://jaeger.example.org/trace/{trace_id}?uiFind={span_id}"); empty: the ids are shown without a link.
MASTERBRAIN_TRACE_URL_TEMPLATE = env_str("MASTERBRAIN_TRACE_URL_TEMPLATE")
try:
    _trace_fields = {
        name for _, name, _, _ in string.Formatter().parse(MASTERBRAIN_TRACE_URL_TEMPLATE) if name is not None
    }
except ValueError:  # a lone { or }
    _trace_fields = {"a lone brace"}
if MASTERBRAIN_TRACE_URL_TEMPLATE and (
    not _trace_fields <= {"trace_id", "span_id"}
    or "trace_id" not in _trace_fields
    or not MASTERBRAIN_TRACE_URL_TEMPLATE.startswith(("https://", "http://"))
):
    raise ImproperlyConfigured(
        "MASTERBRAIN_TRACE_URL_TEMPLATE is an http(s) URL with {trace_id} and optionally {span_id}, and no other "
        f"{{fields}}: {MASTERBRAIN_TRACE_URL_TEMPLATE!r}"
    )

# Ingestion limits. A JSON body is read whole, so the body limit also bounds a worker's memory.
MASTERBRAIN_MAX_BODY_BYTES = env_int("MASTERBRAIN_MAX_BODY_BYTES", 32 * 1024 * 1024, minimum=1024)
MASTERBRAIN_MAX_MESSAGES = env_int("MASTERBRAIN_MAX_MESSAGES", 5000, minimum=1)
MASTERBRAIN_MAX_TOOL_CALLS = env_int("MASTERBRAIN_MAX_TOOL_CALLS", 5000, minimum=1)
MASTERBRAIN_MAX_ARTIFACTS = env_int("MASTERBRAIN_MAX_ARTIFACTS", 5000, minimum=1)
MASTERBRAIN_MAX_BULK_ITEMS = env_int("MASTERBRAIN_MAX_BULK_ITEMS", 1000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = MASTERBRAIN_MAX_BODY_BYTES

# --- Receipts: retention and quotas ------------------------------------------------------------------------------
# Every ingestion attempt leaves a receipt naming its payload, the bytes received, stored once per distinct content
# and compressed. `manage.py prune_receipt_payloads` (run it daily, from cron or a timer) removes the payloads of
# receipts older than MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS and keeps the receipts (outcome, hash, size,
# errors). 0, the default, keeps payloads forever: the design promises that nothing sent is lost, so dropping what
# was sent is the operator's choice.
MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS = env_int("MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS", 0, minimum=0)
# Bytes one API key may send to the ingest endpoints per UTC day (429 with Retry-After beyond; 0: no limit),
# counted in the database, exactly, however many servers answer. The default, 4 GiB, is 128 bodies at the body
# limit, or about 40,000 documents of 100 KB, a day; the ingest throttle alone would let one key send 19 GiB a
# minute.
MASTERBRAIN_KEY_DAILY_BYTES = env_int("MASTERBRAIN_KEY_DAILY_BYTES", 4 * 1024**3, minimum=0)
# --- end of Receipts ----------------------------------------------------------------------------------------------

# --- Read audit ---------------------------------------------------------------------------------------------------
# Who opened a conversation (its page, or the API's detail), by person or key: one row of chats.ReadEvent,
# kept apart from the audit log (views are pruned, write events never are; see docs/SECURITY.md). Repeated views by
# the same person or key of the same conversation within MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS count once, decided
# in the cache above (per process without REDIS_URL, shared with it). MASTERBRAIN_READ_AUDIT off records nothing.
# `manage.py prune_read_audit` (run it daily) deletes read events older than MASTERBRAIN_READ_AUDIT_RETENTION_DAYS
# (0: kept forever). Its old name, MASTERBRAIN_VIEW_EVENT_RETENTION_DAYS, is read for one release, with a warning.
MASTERBRAIN_READ_AUDIT = env_bool("MASTERBRAIN_READ_AUDIT", True)
MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS = env_int("MASTERBRAIN_READ_AUDIT_WINDOW_SECONDS", 300, minimum=1)
MASTERBRAIN_READ_AUDIT_RETENTION_DAYS = env_int_renamed(
    "MASTERBRAIN_READ_AUDIT_RETENTION_DAYS", "MASTERBRAIN_VIEW_EVENT_RETENTION_DAYS", 90, minimum=0
)
# --- end of Read audit --------------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "chats.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's JSONParser, reading as ingest does (chats.strict_json): too deep, NaN or 1e999 is a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": ["chats.api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "chats.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"ingest": MASTERBRAIN_THROTTLE_INGEST},
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # ?format= names a conversation format on this API, not a renderer.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Masterbrain Chat Audit API",
    "DESCRIPTION": "Ingest, read, review and export LLM conversations.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each record names the request it was logged for (the X-Request-ID a client can quote): chats.middleware.
    "filters": {"request_id": {"()": "chats.middleware.RequestIdFilter"}},
    "formatters": {"with_request_id": {"format": "%(levelname)s %(asctime)s [%(request_id)s] %(name)s: %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": "with_request_id"}
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper() or "INFO"},
}
