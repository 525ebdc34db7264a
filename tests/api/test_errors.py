"""Under /api/ every error answers the documented `{"errors": [...]}` shape, whatever raised it, through the real
middleware stack with DEBUG off: Django's 404 and 500, DRF's 405, an unhandled exception in a DRF view or a plain
one. Every response carries an `X-Request-ID`; a 500 names it in its body too, and its traceback is logged with it."""

from __future__ import annotations

import json
import logging

import pytest
from django.conf import settings
from django.test import Client

from chats.middleware import RequestIdFilter

pytestmark = pytest.mark.django_db


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)


def _shaped(response: object, status: int) -> dict[str, object]:
    assert response.status_code == status  # type: ignore[attr-defined]
    assert response["Content-Type"].startswith("application/json")  # type: ignore[index]
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    errors = body["errors"]
    assert isinstance(errors, list) and errors
    assert all(set(error) == {"path", "message"} for error in errors)
    assert response["X-Request-ID"]  # type: ignore[index]
    return body


@pytest.mark.urls("tests.api.urls_raising")
@pytest.mark.parametrize("path", ["/api/v1/test-raise/", "/api/v1/test-raise-plain/"])
def test_an_unhandled_exception_under_the_api_is_a_json_500_with_the_request_id_logged(
    client: Client, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert not settings.DEBUG
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = client.get(path)
    body = _shaped(response, 500)
    request_id = response["X-Request-ID"]
    assert body["request_id"] == request_id
    assert "bug" not in response.content.decode()  # the traceback is logged, not shown
    logged = [record for record in caplog.records if record.exc_info is not None]
    assert logged, "the traceback was not logged"
    assert logged[0].request_id == request_id  # type: ignore[attr-defined]
    assert "a bug in" in str(logged[0].exc_info[1])  # type: ignore[index]


@pytest.mark.urls("tests.api.urls_raising")
def test_a_page_that_fails_keeps_djangos_html_500(client: Client) -> None:
    response = client.get("/test-raise-page/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    assert response["X-Request-ID"]


@pytest.mark.parametrize("path", ["/api/v1/no-such-endpoint/", "/api/v1/queues/notanumber/items/", "/api/"])
def test_a_url_that_names_no_endpoint_is_a_json_404(client: Client, path: str) -> None:
    _shaped(client.get(path), 404)


def test_a_method_an_endpoint_does_not_take_is_a_json_405_with_allow(client: Client, admin_user: object) -> None:
    client.force_login(admin_user)  # type: ignore[arg-type]
    response = client.delete("/api/v1/labels/")
    _shaped(response, 405)
    assert "GET" in response["Allow"]


def test_an_error_answered_outside_the_api_handler_is_reshaped(client: Client) -> None:
    # A request the middleware refuses before any view: a body too large for the site is one; an unparsable
    # Host header is another (Django's 400 page).
    response = client.get("/api/v1/labels/", HTTP_HOST="bad host name")
    _shaped(response, 400)


def test_a_request_id_given_by_a_proxy_is_kept_and_a_hostile_one_replaced(client: Client) -> None:
    given = client.get("/api/v1/labels/", HTTP_X_REQUEST_ID="proxy-1234abcd")
    assert given["X-Request-ID"] == "proxy-1234abcd"
    hostile = client.get("/api/v1/labels/", HTTP_X_REQUEST_ID="x\r\nSet-Cookie: a=b" + "y" * 100)
    assert hostile["X-Request-ID"] != "proxy-1234abcd" and len(hostile["X-Request-ID"]) == 32


def test_an_error_message_quoting_a_lone_surrogate_or_nul_is_a_400_not_a_500(
    client: Client, reviewer: object, source: object
) -> None:
    from chats.services.feedback import feedback_submit
    from tests.factories import make_conversation

    conversation = make_conversation(source, n_messages=3)  # type: ignore[arg-type]
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, message=None, score=1)  # type: ignore[arg-type]
    client.force_login(reviewer)  # type: ignore[arg-type]
    for body in (b'{"score": "\\ud800"}', b'{"score": "a\\u0000b"}', b'{"labels": ["\\udfff"]}'):
        response = client.generic("PATCH", f"/api/v1/feedback/{feedback.uuid}/", body, "application/json")
        _shaped(response, 400)
        json.dumps(response.json()).encode()  # what the client got is valid UTF-8 JSON
