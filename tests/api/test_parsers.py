"""The API's JSON parser (`chats.api.parsers.StrictJSONParser`): a body nested too deep for Python's decoder, NaN,
Infinity or a number beyond a double is a 400 naming no field, on every endpoint that takes JSON; nothing is
written."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import AuditEvent, ExportJob

pytestmark = pytest.mark.django_db

BODIES = [
    b"[" * 5000 + b"]" * 5000,
    b'{"format": "openai", "filters": {"a": ' * 3000 + b"1" + b"}}" * 3000,
    b'{"format": NaN}',
    b'{"format": "openai", "n": 1e999}',
    b'{"format": "\xff"}',
]


@pytest.mark.parametrize("body", BODIES, ids=["deep-array", "deep-object", "nan", "1e999", "not-utf8"])
def test_a_body_python_cannot_decode_safely_is_a_400(reviewer: User, body: bytes) -> None:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(reviewer)
    events = AuditEvent.objects.count()
    response = client.generic("POST", "/api/v1/export/jobs/", data=body, content_type="application/json")  # type: ignore[arg-type]  # bytes, as sent
    assert response.status_code == 400, response.content[:300]
    assert response.json()["errors"][0]["path"] == ""
    assert not ExportJob.objects.exists() and AuditEvent.objects.count() == events
