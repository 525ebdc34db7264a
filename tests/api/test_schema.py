"""The OpenAPI schema: it validates and describes every endpoint. That every operation answers as it says is
fuzzed by schemathesis in tests/fuzz/test_api.py."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

SOURCE_KEY_PATHS = ("/api/v1/ingest/", "/api/v1/ingest/bulk/", "/api/v1/receipts/{uuid}/")
READ_PATHS = (
    "/api/v1/conversations/",
    "/api/v1/conversations/{uuid}/",
    "/api/v1/conversations/{uuid}/export/",
    "/api/v1/artifacts/",
    "/api/v1/artifacts/{artifact_id}/",
    "/api/v1/labels/",
    "/api/v1/feedback/",
    "/api/v1/feedback/{uuid}/",
    "/api/v1/export/",
    "/api/v1/export/artifacts/",
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
            for code in codes - {"200", "201", "204", "308"}:  # a redirect has no body
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


def test_the_schema_generates_without_warnings_and_validates(tmp_path: Any) -> None:
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    assert "/api/v1/ingest/bulk/" in target.read_text()
