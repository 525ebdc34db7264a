"""The OpenAPI schema: it validates, it describes every endpoint, and schemathesis finds every operation answering
as it says (no server error, documented status codes, content types, headers and bodies)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.test import APIClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from chats import services
from tests.factories import last_assistant, make_conversation, make_labels, make_record_qa

pytestmark = pytest.mark.django_db

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
SOURCE_KEY_PATHS = ("/api/v1/ingest/", "/api/v1/ingest/bulk/", "/api/v1/receipts/{uuid}/")
READ_PATHS = (
    "/api/v1/conversations/",
    "/api/v1/conversations/{uuid}/",
    "/api/v1/conversations/{uuid}/export/",
    "/api/v1/artifacts/",
    "/api/v1/labels/",
    "/api/v1/feedback/",
    "/api/v1/feedback/{uuid}/",
    "/api/v1/export/",
)


def test_the_schema_is_served_as_openapi_3_and_lists_every_endpoint(api_client: APIClient) -> None:
    response = api_client.get("/api/v1/schema/?format=json")

    assert response.status_code == 200
    schema = response.json() if response["Content-Type"].startswith("application/json") else None
    if schema is None:
        import yaml

        schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert set(READ_PATHS + SOURCE_KEY_PATHS) <= set(schema["paths"])
    export = schema["paths"]["/api/v1/conversations/{uuid}/export/"]["get"]
    assert "X-Export-Omitted" in export["responses"]["200"]["headers"]
    for path in READ_PATHS:
        for method, operation in schema["paths"][path].items():
            codes = set(operation["responses"])
            assert "401" in codes, f"{method.upper()} {path} does not document 401"
            for code in codes - {"200", "201", "204"}:
                body = operation["responses"][code]["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/Error"}, f"{method} {path} {code}"


def test_the_docs_page_loads_swagger_ui_from_static_with_no_inline_script(api_client: APIClient) -> None:
    response = api_client.get("/api/v1/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "<script>" not in html and "cdn" not in html.lower()
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    script = api_client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema/" in script.content.decode()
    assert api_client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js").status_code == 200


@pytest.fixture
def seeded(source: Any, reviewer: Any) -> dict[str, str]:
    """Some data to find, and credentials for each kind of caller."""
    make_labels("helpful", "hallucination")
    conversation = make_conversation(source, n_messages=5, branches=1)
    make_record_qa(source)
    services.feedback_submit(
        author=reviewer, conversation=conversation, message=last_assistant(conversation), score=1, comment="ok"
    )
    _, personal = services.api_key_create(user=reviewer)
    _, source_key = services.api_key_create(source=source)
    return {"personal": personal, "source": source_key}


def _fuzz(operation: Any, headers: dict[str, str]) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=10,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def check(case: Any) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    check()


@pytest.fixture
def wsgi_app() -> Any:
    """The real WSGI application, minus what Django's test client also leaves out: closing the database
    connection after each request, which would end the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _fuzz_paths(app: Any, seeded: dict[str, str], paths: tuple[str, ...]) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", app)
    failures: list[str] = []
    tested = set()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path not in paths:
            continue
        key = seeded["source"] if operation.path in SOURCE_KEY_PATHS else seeded["personal"]
        try:
            _fuzz(operation, {"Authorization": f"Api-Key {key}"})
        except Exception as failure:
            failures.append(f"{operation.method.upper()} {operation.path}: {failure}")
        tested.add(operation.path)
    assert tested == set(paths)
    assert not failures, "\n\n".join(failures)


def test_every_read_feedback_and_export_operation_answers_as_the_schema_says(
    seeded: dict[str, str], wsgi_app: Any
) -> None:
    _fuzz_paths(wsgi_app, seeded, READ_PATHS)


def test_the_ingest_operations_answer_as_the_schema_says(seeded: dict[str, str], wsgi_app: Any) -> None:
    _fuzz_paths(wsgi_app, seeded, SOURCE_KEY_PATHS)


def test_the_schema_generates_without_warnings_and_validates(tmp_path: Any) -> None:
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    assert "/api/v1/ingest/bulk/" in target.read_text()
