"""create_api_token: a personal token for a reviewer or an auditor, printed once, that reads the API."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


def uuids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [item["uuid"] for item in response.json()["results"]]


def test_create_api_token_prints_a_token_that_reads(source: Any, auditor: Any) -> None:
    conversation = make_conversation(source)
    out = StringIO()

    call_command("create_api_token", "aude", stdout=out, stderr=StringIO())

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {out.getvalue().splitlines()[-1]}")
    assert uuids(client.get("/api/v1/conversations/")) == [str(conversation.uuid)]


def test_create_api_token_refuses_a_user_without_a_role(no_role_user: Any) -> None:
    with pytest.raises(CommandError, match="neither a reviewer"):
        call_command("create_api_token", "nobody", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="no user"):
        call_command("create_api_token", "ghost", stdout=StringIO(), stderr=StringIO())
