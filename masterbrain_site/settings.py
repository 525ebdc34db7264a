"""The one settings module. Production differs from a laptop only by environment variables (see .env.example)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from masterbrain_site.env import env_bool, env_int, env_list, env_rate, env_str, parse_database_url

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
    "chats",
]

MIDDLEWARE = [
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
    "chats.middleware.DomainErrorMiddleware",
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
# Local runs and tests serve static files straight from static/ and the apps; production runs collectstatic.
WHITENOISE_USE_FINDERS = _LOCAL_RUN
WHITENOISE_AUTOREFRESH = DEBUG

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

# Model output is untrusted: no inline script, no foreign script, images from https and data: only.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "https:", "data:"],
    "media-src": [CSP.SELF, "https:", "data:"],
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

# Throttles. Ingest: requests per API key (a DRF rate, "600/min"). Sign-in: failed attempts per user name and
# per client address within MASTERBRAIN_LOGIN_WINDOW_SECONDS, after which sign-in answers 429 until it passes.
MASTERBRAIN_THROTTLE_INGEST = env_rate("MASTERBRAIN_THROTTLE_INGEST", "600/min")
MASTERBRAIN_LOGIN_FAILURES_PER_USER = env_int("MASTERBRAIN_LOGIN_FAILURES_PER_USER", 5, minimum=1)
MASTERBRAIN_LOGIN_FAILURES_PER_ADDRESS = env_int("MASTERBRAIN_LOGIN_FAILURES_PER_ADDRESS", 20, minimum=1)
MASTERBRAIN_LOGIN_WINDOW_SECONDS = env_int("MASTERBRAIN_LOGIN_WINDOW_SECONDS", 15 * 60, minimum=1)

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

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "chats.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
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
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper() or "INFO"},
}
