"""Schemathesis's stateful run: sequences of calls that follow the links between operations (an ingest's receipt
and conversation, a feedback entry's uuid), so that the fuzzer reaches reads and writes of what it has just
created instead of 404s. Links are inferred by schemathesis from the response schemas and path parameters.

Each caller runs its own machine: a source's key (ingest, then read what it stored), and a reviewer's session
(give feedback, then read, change and delete it). Every answer is checked against the schema and must not be a
server error. The example count follows the fuzz profile (``FUZZ_EXAMPLES`` raises it; ``make fuzz`` does).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from hypothesis import settings

from chats.services.feedback import feedback_submit
from chats.services.sources import api_key_create
from tests.factories import make_conversation, make_labels
from tests.fuzz.test_api import CHECKS, api_schema, wsgi_app  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

STATEFUL = settings.get_profile("fuzz-stateful")


# Each machine follows only the operations its caller may use, named here so that a new endpoint does not take
# a short run's steps from them; the others (artifacts, exports, labels, team review, datasets) are fuzzed one call
# at a time (tests/fuzz/test_api.py). A source key's run starts from the conversation list; a reviewer's from
# their feedback.
KEY_OPERATIONS = r"^/api/v1/(ingest|receipts|conversations)/"
REVIEWER_OPERATIONS = r"^/api/v1/(conversations|feedback)/"
# A reader's export jobs: ask for one, then follow it to its state and its download.
EXPORT_JOB_OPERATIONS = r"^/api/v1/export/jobs/"


def _machine(
    schema: Any,
    credentials: dict[str, Any],
    seen: list[tuple[str, str, int]],
    operations: str = REVIEWER_OPERATIONS,
    each_sequence: Callable[[], object] = lambda: None,
) -> Any:
    class Workflow(schema.include(path_regex=operations).as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            each_sequence()

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return dict(credentials)

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            seen.append((case.method.upper(), case.operation.path, response.status_code))
            case.validate_response(response, checks=CHECKS)

    return Workflow


def test_the_links_between_operations_are_known(api_schema: Any) -> None:  # noqa: F811
    machine = api_schema.as_state_machine()
    # Without links the stateful run would only repeat the stateless one.
    assert machine.bundles, "no links between operations"


def test_a_source_key_ingests_and_reads_back_statefully(api_schema: Any, source: Any) -> None:  # noqa: F811
    make_conversation(source, n_messages=5)
    _, key = api_key_create(source=source)
    seen: list[tuple[str, str, int]] = []
    _machine(api_schema, {"headers": {"Authorization": f"Api-Key {key}"}}, seen, KEY_OPERATIONS).run(settings=STATEFUL)
    assert seen and all(status < 500 for _, _, status in seen)
    # A uuid read from a list answer opened its conversation: a random uuid names none, so only a link gets here.
    assert ("GET", "/api/v1/conversations/{uuid}/", 200) in seen


def test_a_reviewer_gives_and_changes_feedback_statefully(
    api_schema: Any,  # noqa: F811
    source: Any,
    reviewer: Any,
) -> None:
    (helpful,) = make_labels("helpful")
    conversation = make_conversation(source, n_messages=5)

    def own_feedback() -> None:
        # Each sequence starts with feedback of the reviewer's own (an earlier one may have deleted it): the list's
        # answer links its uuid to the reads, changes and deletions that follow.
        feedback_submit(author=reviewer, conversation=conversation, score=1, labels=[helpful])

    session = Client()
    session.force_login(reviewer)
    csrf = secrets.token_hex(16)
    credentials = {
        "headers": {"X-CSRFToken": csrf},
        "cookies": {"sessionid": session.cookies["sessionid"].value, "csrftoken": csrf},
    }
    seen: list[tuple[str, str, int]] = []
    _machine(api_schema, credentials, seen, each_sequence=own_feedback).run(settings=STATEFUL)
    assert seen and all(status < 500 for _, _, status in seen)
    # Random uuids name no feedback: only a uuid taken from an answer reads, changes or deletes one.
    reached = {(method, status) for method, path, status in seen if path == "/api/v1/feedback/{uuid}/"}
    assert {("GET", 200), ("DELETE", 204)} <= reached
    # A change reached its feedback: applied, or refused for its generated body, never "no such feedback".
    assert reached & {("PATCH", 200), ("PATCH", 400)}


def test_a_reader_asks_for_an_export_job_and_follows_it_statefully(
    api_schema: Any,  # noqa: F811
    source: Any,
    reviewer: Any,
) -> None:
    make_conversation(source, n_messages=3)
    _, personal = api_key_create(user=reviewer)
    seen: list[tuple[str, str, int]] = []
    credentials = {"headers": {"Authorization": f"Api-Key {personal}"}}
    _machine(api_schema, credentials, seen, EXPORT_JOB_OPERATIONS).run(settings=STATEFUL)
    assert seen and all(status < 500 for _, _, status in seen)
    # A random uuid names no job: only the id a created job (or the list) answered with reads one.
    assert ("GET", "/api/v1/export/jobs/{uuid}/", 200) in seen or (
        "GET",
        "/api/v1/export/jobs/{uuid}/download/",
        200,
    ) in seen
