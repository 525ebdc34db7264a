"""create_source: a source and a key for it, printed once, that the ingest API accepts."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from chats.models import ApiKey, Source

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_source_prints_a_key_that_authenticates_and_stores_only_its_hash():
    output = run("create_source", "lab-logger")
    key = output.strip().splitlines()[-1]

    stored = ApiKey.objects.get(source__name="lab-logger")
    assert stored.key_hash == ApiKey.hash_key(key)
    assert not ApiKey.objects.filter(key_hash=key).exists() and key not in stored.prefix
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    response = client.post(
        "/api/v1/ingest/",
        data=json.dumps({"chat_history": [{"role": "user", "content": "hi"}]}),
        content_type="application/json",
    )
    assert response.status_code == 201


def test_create_source_reuses_the_source_and_makes_a_new_key():
    first = run("create_source", "lab-logger").strip().splitlines()[-1]
    second = run("create_source", "lab-logger").strip().splitlines()[-1]

    assert first != second
    assert Source.objects.filter(name="lab-logger").count() == 1
    assert ApiKey.objects.filter(source__name="lab-logger").count() == 2
