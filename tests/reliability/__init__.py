"""Reliability under faults and load, against the real server (gunicorn) and a PostgreSQL database of its own."""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings


def base_url() -> str:
    """The PostgreSQL server the suite runs on, as a URL to its maintenance database: where throwaway databases are
    created."""
    database = settings.DATABASES["default"]
    user = quote(database.get("USER") or "postgres", safe="")
    password = f":{quote(database['PASSWORD'], safe='')}" if database.get("PASSWORD") else ""
    host = database.get("HOST") or "127.0.0.1"
    return f"postgres://{user}{password}@{host}:{database.get('PORT') or 5432}/postgres"
