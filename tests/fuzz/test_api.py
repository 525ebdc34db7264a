"""Schemathesis over every operation of the OpenAPI schema, called through the real WSGI application by the
callers each one serves: a source's key (ingest, receipts, and the reads a source may make), a reviewer's personal
token, and a reviewer's session (with its CSRF token) for feedback.

Each answer must be what the schema says: no server error, a documented status code, content type and headers,
and a body that matches its schema. Generated cases are mixed with known ids and real documents, so that the
fuzzer reaches the answers behind a 404 or a 400 too (a stored conversation, a reviewer's own feedback, a
document that ingests).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from chats.models import IngestionReceipt
from chats.services.export_jobs import export_job_create
from chats.services.feedback import feedback_submit
from chats.services.saved_views import saved_view_create
from chats.services.sources import api_key_create
from tests.factories import last_assistant, make_conversation, make_labels, make_record_qa
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db

API = settings.get_profile("fuzz-api")
SCHEMA_URL = "/api/v1/schema/?format=json"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

# Who calls each operation: those it serves, and someone it refuses (an anonymous caller, or a source's key where
# only people may write). test_every_operation_of_the_schema_is_fuzzed keeps the table complete.
SOURCE = ("source", "anonymous")
READS = ("personal", "source", "anonymous")
REVIEW = ("personal", "session", "source", "anonymous")
# Team review and datasets: people only. A source's key is refused and no one signed out gets in, whatever the input.
QUEUES = ("source", "anonymous")
# Staff only (the ingest queue's health): a staff member's session is served, every key refused.
STAFF = ("staff", "personal", "source", "anonymous")
STAFF_ONLY = ("/api/v1/health/",)
OPERATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("POST", "/api/v1/ingest/"): SOURCE,
    ("POST", "/api/v1/ingest/bulk/"): SOURCE,
    ("POST", "/api/v1/otel/v1/traces"): SOURCE,
    ("GET", "/api/v1/receipts/{uuid}/"): SOURCE,
    ("GET", "/api/v1/receipts/{uuid}/payload/"): SOURCE,
    ("GET", "/api/v1/health/"): STAFF,
    ("GET", "/api/v1/conversations/"): READS,
    ("GET", "/api/v1/conversations/{uuid}/"): READS,
    ("GET", "/api/v1/conversations/{uuid}/export/"): READS,
    ("GET", "/api/v1/artifacts/"): READS,
    ("GET", "/api/v1/artifacts/{artifact_id}/"): READS,
    ("GET", "/api/v1/export/artifacts/"): READS,
    ("GET", "/api/v1/labels/"): READS,
    ("GET", "/api/v1/export/"): READS,
    ("GET", "/api/v1/export/jobs/"): READS,
    ("POST", "/api/v1/export/jobs/"): READS,
    ("GET", "/api/v1/export/jobs/{uuid}/"): READS,
    ("GET", "/api/v1/export/jobs/{uuid}/download/"): READS,
    ("GET", "/api/v1/feedback/"): REVIEW,
    ("POST", "/api/v1/feedback/"): REVIEW,
    ("GET", "/api/v1/feedback/{uuid}/"): REVIEW,
    ("PATCH", "/api/v1/feedback/{uuid}/"): REVIEW,
    ("DELETE", "/api/v1/feedback/{uuid}/"): REVIEW,
    ("GET", "/api/v1/queues/"): QUEUES,
    ("POST", "/api/v1/queues/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/items/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/items/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/next/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/agreement/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/rules/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/rules/"): QUEUES,
    ("PATCH", "/api/v1/queues/{id}/rules/{rule}/"): QUEUES,
    ("DELETE", "/api/v1/queues/{id}/rules/{rule}/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/rules/{rule}/run/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/rules/{rule}/runs/{run}/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/items/{item}/reviews/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/items/{item}/reviews/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/items/{item}/resolution/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/items/{item}/resolution/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/"): QUEUES,
    ("PATCH", "/api/v1/queues/{id}/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/progress/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/items/{item}/assign/"): QUEUES,
    ("POST", "/api/v1/queues/{id}/items/{item}/release/"): QUEUES,
    ("GET", "/api/v1/queues/{id}/items/{item}/draft/"): QUEUES,
    ("PUT", "/api/v1/queues/{id}/items/{item}/draft/"): QUEUES,
    ("GET", "/api/v1/datasets/"): QUEUES,
    ("POST", "/api/v1/datasets/"): QUEUES,
    ("GET", "/api/v1/datasets/{id}/"): QUEUES,
    ("GET", "/api/v1/datasets/{id}/export/"): QUEUES,
    ("GET", "/api/v1/views/"): REVIEW,
    ("POST", "/api/v1/views/"): REVIEW,
    ("GET", "/api/v1/views/{uuid}/"): REVIEW,
    ("PUT", "/api/v1/views/{uuid}/"): REVIEW,
    ("PATCH", "/api/v1/views/{uuid}/"): REVIEW,
    ("DELETE", "/api/v1/views/{uuid}/"): REVIEW,
}
# Known mismatches, each pinned until it is fixed (strict: the fix makes the case pass, and the mark must go).
KNOWN: dict[tuple[str, str, str], str] = {}
CASES = [
    pytest.param(
        method,
        path,
        caller,
        id=f"{method} {path} as {caller}",
        marks=[pytest.mark.xfail(strict=True, reason=KNOWN[method, path, caller])]
        if (method, path, caller) in KNOWN
        else [],
    )
    for (method, path), callers in OPERATIONS.items()
    for caller in callers
]

# One real document per format, to send as is or with generated keys added.
DOCUMENTS = [
    load_fixture(name)
    for name in (
        "openai/pcr_nonspecific_bands_tool_call.json",
        "chat_document/masterbrain_chat_document.json",
        "record_qa/seed_protocol_injection.json",
        "chat_history/with_conversation_id_and_context.json",
        "chat_graph/branched_graph.json",
        "chatgpt_export/app_export_with_metadata_tool_calls.json",
        "openwebui/colony_pcr_regenerated_and_rated.json",
    )
]

# Documents with the strings that once broke the ingest endpoints: planted among the generated cases so that
# schemathesis checks every answer to them against the schema (bulk items are mixed with good ones).
HOSTILE_DOCUMENTS = [
    [{"role": "user", "content": "\ud800"}],
    {"chat_id": "nul", "main_messages": [{"role": "user", "content": "a\u0000b"}]},
    {"conversation_id": "c" * 300, "chat_history": [{"role": "user", "content": "a long id"}]},
    {"conversation_id": "p" * 255 + "-one", "chat_history": [{"role": "user", "content": "shares a prefix"}]},
    {"conversation_id": "p" * 255 + "-two", "chat_history": [{"role": "user", "content": "shares a prefix"}]},
    {
        "conversation_id": "graph",
        "nodes": [{"node_id": "n" * 300, "parent_id": None, "message": {"author": {"role": "user"}, "content": {}}}],
    },
]

# The bulk endpoint's NDJSON body is a string in the schema: sent as it is, like text/plain.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")

_loaded: dict[str, Any] = {}


@pytest.fixture
def wsgi_app() -> Any:
    """The real WSGI application, minus what Django's test client also leaves out: closing the database
    connection after each request, which would end the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    if "app" not in _loaded:
        _loaded["app"] = get_wsgi_application()
    yield _loaded["app"]
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(wsgi_app: Any) -> Any:
    """The schema the application serves, loaded once (generating it takes about a second)."""
    if "schema" not in _loaded:
        _loaded["schema"] = schemathesis.openapi.from_wsgi(SCHEMA_URL, wsgi_app)
    return _loaded["schema"]


def _operations(schema: Any) -> dict[tuple[str, str], Any]:
    found = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        found[(operation.method.upper(), operation.path)] = operation
    return found


@pytest.fixture
def seeded(source: Any, other_source: Any, reviewer: Any, other_reviewer: Any) -> dict[str, Any]:
    """Data to find, and the credentials of each caller."""
    make_labels("helpful", "hallucination")
    conversation = make_conversation(source, n_messages=7, branches=1)
    record_qa = make_record_qa(source)
    make_conversation(other_source, n_messages=3)  # out of the source key's reach
    message = last_assistant(conversation)
    own, _ = feedback_submit(author=reviewer, conversation=conversation, message=message, score=1)
    others, _ = feedback_submit(author=other_reviewer, conversation=conversation, message=None, score=-1)
    _, personal = api_key_create(user=reviewer)
    _, source_key = api_key_create(source=source)
    # An export job of each reading caller (the reviewer's, the source's): each sees its own.
    jobs = [
        export_job_create(actor=reviewer, requested_by=reviewer, format="openai"),
        export_job_create(actor=reviewer, requested_by=None, source=source, format="training"),
    ]
    view = saved_view_create(actor=reviewer, name="Thumbs down", query="score=-1")
    session = Client()
    session.force_login(reviewer)
    staff = Client()
    staff.force_login(User.objects.create_user("fuzz-staff", is_staff=True))
    csrf = secrets.token_hex(16)  # an unmasked secret: Django accepts it as cookie and header alike
    return {
        "callers": {
            "source": {"headers": {"Authorization": f"Api-Key {source_key}"}},
            "personal": {"headers": {"Authorization": f"Api-Key {personal}"}},
            "session": {
                "headers": {"X-CSRFToken": csrf},
                "cookies": {"sessionid": session.cookies["sessionid"].value, "csrftoken": csrf},
            },
            "staff": {"cookies": {"sessionid": staff.cookies["sessionid"].value}},
            "anonymous": {},
        },
        "uuids": {
            "/api/v1/receipts/{uuid}/": [str(uuid) for uuid in IngestionReceipt.objects.values_list("uuid", flat=True)],
            "/api/v1/receipts/{uuid}/payload/": [
                str(uuid) for uuid in IngestionReceipt.objects.values_list("uuid", flat=True)
            ],
            "/api/v1/conversations/{uuid}/": [str(conversation.uuid)],
            "/api/v1/conversations/{uuid}/export/": [str(conversation.uuid)],
            "/api/v1/feedback/{uuid}/": [str(own.uuid), str(others.uuid)],
            "/api/v1/export/jobs/{uuid}/": [str(job.uuid) for job in jobs],
            "/api/v1/export/jobs/{uuid}/download/": [str(job.uuid) for job in jobs],
            "/api/v1/views/{uuid}/": [str(view.uuid)],
        },
        "artifact_ids": sorted(set(record_qa.artifacts.values_list("artifact_id", flat=True))),
        "feedback_targets": [
            {"conversation": str(conversation.uuid), "message": message.key},
            {"conversation": str(conversation.uuid), "message": None},
        ],
    }


def _strategy(operation: Any, seeded: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Generated cases (valid, and some invalid), and cases planted with what exists."""
    if "{id}" in operation.path:
        # Team review's paths name a queue (and an item) by number: any number resolves to the view, which must
        # answer as documented whatever the body and query, valid or not.
        numbers = st.fixed_dictionaries(
            {
                name: st.integers(1, 2**31 - 1)
                for name in ("id", "item", "rule", "run")
                if f"{{{name}}}" in operation.path
            }
        )
        return st.one_of(
            numbers.flatmap(lambda ids: operation.as_strategy(path_parameters=ids)),
            numbers.flatmap(
                lambda ids: operation.as_strategy(generation_mode=GenerationMode.NEGATIVE, path_parameters=ids)
            ),
        )
    strategies = [operation.as_strategy()]
    if "{" not in operation.path:
        strategies.append(operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    elif not operation.path.startswith("/api/v1/receipts/{uuid}/"):  # whose only input is their uuid
        # Invalid queries and bodies, but a path that resolves: a path that resolves to no view is answered with
        # Django's HTML page (test_a_url_under_the_api_that_resolves_to_nothing_answers_with_the_error_shape).
        strategies.append(
            st.uuids().flatmap(
                lambda uuid: operation.as_strategy(
                    generation_mode=GenerationMode.NEGATIVE, path_parameters={"uuid": str(uuid)}
                )
            )
        )
    for uuid in seeded["uuids"].get(operation.path, []):
        strategies.append(operation.as_strategy(path_parameters={"uuid": uuid}))
    if "{artifact_id}" in operation.path:
        for artifact_id in seeded["artifact_ids"]:
            strategies.append(operation.as_strategy(path_parameters={"artifact_id": artifact_id}))
    if operation.path == "/api/v1/ingest/":
        strategies.extend(operation.as_strategy(body=document) for document in DOCUMENTS + HOSTILE_DOCUMENTS)
    if operation.path == "/api/v1/ingest/bulk/":
        for documents in (DOCUMENTS, DOCUMENTS[:2] + HOSTILE_DOCUMENTS):
            strategies.append(operation.as_strategy(body=documents, media_type="application/json"))
            ndjson = "\n".join(json.dumps(document) for document in documents)
            strategies.append(operation.as_strategy(body=ndjson, media_type="application/x-ndjson"))
    if (operation.method.upper(), operation.path) == ("POST", "/api/v1/feedback/"):
        labels = st.lists(st.sampled_from(["helpful", "hallucination", "no-such-label"]), max_size=2)
        fields = st.fixed_dictionaries(
            {"score": st.sampled_from([-1, 0, 1, None])},
            optional={"labels": labels, "comment": st.text(max_size=20), "correction": st.text(max_size=20)},
        )

        def feedback_bodies(target: dict[str, Any]) -> Any:
            return fields.flatmap(lambda extra: operation.as_strategy(body={**extra, **target}))

        strategies.extend(feedback_bodies(target) for target in seeded["feedback_targets"])
    if (operation.method.upper(), operation.path) == ("PATCH", "/api/v1/feedback/{uuid}/"):
        # A change any author may make to their own feedback, planted on each feedback that exists: random bodies
        # alone seldom pass validation, and the check below needs the owner's change to get through.
        def comment_changes(uuid: str) -> Any:
            return st.text(max_size=20).flatmap(
                lambda comment: operation.as_strategy(path_parameters={"uuid": uuid}, body={"comment": comment})
            )

        strategies.extend(comment_changes(uuid) for uuid in seeded["uuids"][operation.path])
    return st.one_of(strategies)


@pytest.mark.parametrize(("method", "path", "caller"), CASES)
def test_every_operation_answers_as_the_schema_says(
    method: str, path: str, caller: str, seeded: dict[str, Any], api_schema: Any
) -> None:
    operation = _operations(api_schema)[(method, path)]
    credentials = seeded["callers"][caller]
    reached: set[int] = set()

    @API
    @given(case=_strategy(operation, seeded))
    def answers_as_documented(case: Any) -> None:
        response = case.call_and_validate(checks=CHECKS, **credentials)
        reached.add(response.status_code)

    answers_as_documented()

    # The fuzzer got past the door it should get past, and no further than it should.
    success = {code for code in reached if 200 <= code < 300}
    if caller == "anonymous":
        assert 401 in reached and reached <= {400, 401}, reached
    elif (
        caller == "source"
        and (
            (path.startswith("/api/v1/feedback/") and method != "GET")
            or path.startswith(("/api/v1/queues/", "/api/v1/datasets/", "/api/v1/views/"))
        )
    ) or (path in STAFF_ONLY and caller != "staff"):
        assert 403 in reached and not success, reached
    else:
        assert success, reached


def test_every_operation_of_the_schema_is_fuzzed(api_schema: Any) -> None:
    assert set(_operations(api_schema)) == set(OPERATIONS)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/receipts/not-a-uuid/",
        "/api/v1/receipts/not-a-uuid/payload/",
        "/api/v1/conversations/a.b/",
        "/api/v1/conversations/a.b/export/",
        "/api/v1/feedback/a.b/",
        "/api/v1/no-such-endpoint/",
    ],
)
def test_a_url_under_the_api_that_resolves_to_nothing_answers_with_the_error_shape(
    path: str, seeded: dict[str, Any], api_client: Any
) -> None:
    caller = "source" if path.startswith("/api/v1/receipts/") else "personal"
    api_client.credentials(HTTP_AUTHORIZATION=seeded["callers"][caller]["headers"]["Authorization"])

    response = api_client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert [set(error) for error in response.json()["errors"]] == [{"path", "message"}]


def _calls(arguments: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": arguments}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1"}]


# Bodies found by fuzzing the parsers that the ingest endpoints once answered with a server error.
HOSTILE_BODIES = {
    "nested-too-deep": (b"[" * 100_000, 400),
    "integer-over-4300-digits": (
        b'{"chat_history": [{"role": "user", "content": "x"}], "n": ' + b"1" * 5000 + b"}",
        400,
    ),
    "number-beyond-a-double": (b'{"chat_history": [{"role": "user", "content": "x"}], "n": 1e999}', 400),
    "nan-in-arguments": (json.dumps(_calls('{"a": NaN}')).encode(), 201),
    "infinity-in-arguments": (json.dumps(_calls("[1e999]")).encode(), 201),
    "arguments-nested-too-deep": (json.dumps(_calls("[" * 100_000)).encode(), 201),
    "unhashable-feedback-score": (
        json.dumps({"main_messages": [{"role": "user", "content": "x"}], "human_feedback": [{"score": []}]}).encode(),
        201,
    ),
    "timestamp-before-year-1-in-utc": (
        json.dumps(
            {"main_messages": [{"role": "user", "content": "x"}], "start_time": "0001-01-01T00:00+01:00"}
        ).encode(),
        201,
    ),
}


@pytest.mark.parametrize("name", HOSTILE_BODIES)
def test_bodies_that_once_failed_the_ingest_endpoints_are_answered_as_documented(name: str, ingest_client: Any) -> None:
    body, expected = HOSTILE_BODIES[name]

    one = ingest_client.post("/api/v1/ingest/", data=body, content_type="application/json")
    bulk = ingest_client.post(
        "/api/v1/ingest/bulk/", data=body.replace(b"\n", b" "), content_type="application/x-ndjson"
    )

    assert one.status_code == expected, one.json()
    assert bulk.status_code == 200
    [item] = bulk.json()["results"]
    assert item["outcome"] == ("rejected" if expected == 400 else "unchanged"), item  # the same document again
