"""Sending raw bodies to the ingest API as a source does, and reading the errors it answers a refusal with."""

from __future__ import annotations

from typing import Any

from django.test import Client

INGEST = "/api/v1/ingest/"
BULK = "/api/v1/ingest/bulk/"


def post(key: str, body: str | bytes, *, path: str = INGEST, content_type: str = "application/json") -> Any:
    """``body`` sent as is (bytes are not re-encoded) with the source's API key."""
    return Client().post(path, body, content_type=content_type, HTTP_AUTHORIZATION=f"Api-Key {key}")


def assert_refused_with_paths(response: Any) -> list[dict[str, str]]:
    """A 4xx answer in JSON whose every error has a message and a JSON pointer ("" for the whole body)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    errors: list[dict[str, str]] = response.json()["errors"]
    assert errors, response.json()
    for error in errors:
        assert isinstance(error["path"], str) and (error["path"] == "" or error["path"].startswith("/")), error
        assert error["message"], error
    return errors
