"""No query string, cursor or path value makes the site answer 5xx.

Every GET of the review pages and of the API (taken from the URL configuration, so a new page or endpoint is
covered the day it ships) is requested by each kind of caller (a source's key, a reviewer's session, an auditor's
session, anonymous) with hypothesis-generated query strings: the parameters the site reads, given dates at the
limits of the calendar, huge integers, cursors that decode to something this site never gave out, overlong
strings and odd Unicode. The Django test client re-raises an exception a view lets through, so a crash fails the
test with its traceback; an answer of 5xx fails it too.

The named regressions below each reproduce one crash that was found by hand, so that it reads as behaviour.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chats.filters.audit import AuditEventFilter
from chats.filters.conversations import ConversationFilter
from chats.filters.exports import ExportFilter
from chats.filters.feedback import FeedbackFilter
from chats.models import AuditEvent, Conversation, IngestionReceipt, Source
from chats.services.export_jobs import export_job_create
from chats.services.feedback import feedback_submit
from chats.services.sources import api_key_create
from tests.factories import last_assistant, make_conversation, make_record_qa

pytestmark = pytest.mark.django_db

# FUZZ_EXAMPLES raises the count for a longer hunt (`make fuzz`).
QUERY = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "") or 20),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _b64(text: str) -> str:
    """A conversation cursor's encoding (unpadded URL-safe base64)."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _drf(text: str) -> str:
    """A DRF cursor's encoding (padded base64), as the feedback list gives them out."""
    return base64.b64encode(text.encode()).decode()


# The parameters some page or endpoint reads: every filter, paging, and each view's own options.
PARAMETERS = sorted(
    {
        *ConversationFilter.base_filters,
        *ExportFilter.base_filters,
        *FeedbackFilter.base_filters,
        *AuditEventFilter.base_filters,
        "cursor",
        "page_size",
        "format",
        "envelope",
        "branch",
        "order",
        "artifact_id",
        "message",
        "key",
        "next",
        "at",
        "sort",
        "after",
        "around",
        "unanswered_after",
        "limit",
        "before",
        "from",
        "feedback",
        "kind",
        "page",
        "old",
        "new",
    }
)

EDGE_VALUES = st.sampled_from(
    [
        "9999-12-31",
        "0001-01-01",
        "0000-00-00",
        "2026-02-30",
        "-1",
        "0",
        str(2**63),
        "9" * 25,
        str(-(2**63) - 1),
        "9" * 400,
        "1e309",
        "NaN",
        "true",
        "null",
        "n." + _b64("0001-01-01T00:00:00+23:59|1"),
        "p." + _b64("9999-12-31T23:59:59-23:59|1"),
        "n." + _b64(f"2026-01-01T00:00:00+00:00|{2**70}"),
        "n." + _b64("2026-01-01T00:00:00+00:00|-5"),
        "n.!!!",
        _drf("p=abc"),
        _drf("p=" + "9" * 30),
        _drf("o=99999999999999999999&p=1"),
        _drf("r=1&p=-9223372036854775809"),
        "x" * 5000,
        "\x00",
        "\ud800",
        "a\u202eb",
        "%",
        "' OR 1=1 --",
    ]
)
VALUES = st.one_of(
    EDGE_VALUES,
    st.text(max_size=40),
    st.integers().map(str),
    st.dates().map(str),
    st.datetimes().map(lambda moment: "n." + _b64(f"{moment.isoformat()}+05:00|{moment.microsecond}")),
)
QUERIES = st.dictionaries(st.sampled_from(PARAMETERS), VALUES, max_size=4)


def _routes(patterns: list[Any], namespace: str = "") -> Iterator[tuple[str, list[str]]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = ":".join(part for part in (namespace, pattern.namespace or "") if part)
            yield from _routes(pattern.url_patterns, inner)
        else:
            assert isinstance(pattern, URLPattern)
            if namespace in ("chats", "api") and pattern.name:
                yield f"{namespace}:{pattern.name}", sorted(pattern.pattern.regex.groupindex)


ROUTES = sorted(_routes(get_resolver().url_patterns))


@pytest.fixture
def site(reviewer: User, auditor: User) -> dict[str, Any]:
    source = Source.objects.create(name="alpha")
    Source.objects.create(name="beta")
    conversation = make_record_qa(source)
    make_conversation(source, n_messages=8)
    feedback, _ = feedback_submit(
        conversation=conversation, message=last_assistant(conversation), author=reviewer, score=1
    )
    _, key = api_key_create(source=source, name="reader")
    receipt = IngestionReceipt.objects.filter(conversation=conversation).first()
    assert receipt is not None
    artifact = conversation.artifacts.first()
    assert artifact is not None
    return {
        "uuid": str(conversation.uuid),
        "artifact_id": artifact.artifact_id,
        "feedback_uuid": str(feedback.uuid),
        "receipt": str(receipt.uuid),
        "feedback": str(feedback.uuid),
        "key": key,
        "pk": str(AuditEvent.objects.order_by("id").values_list("id", flat=True)[0]),  # an audit event, a queue's
        "item": "1",  # a queue's item (none: its routes answer 404, never 500)
        "rule": "1",  # a queue's rule (none either)
        "run": "1",  # a rule's run (none either)
        "export_job": str(export_job_create(actor=reviewer, requested_by=reviewer, format="openai").uuid),
        "reviewer": reviewer,
        "auditor": auditor,
    }


def _client(kind: str, site: dict[str, Any]) -> Client:
    client = Client()
    if kind == "source":
        client.defaults["HTTP_AUTHORIZATION"] = f"Api-Key {site['key']}"
    elif kind in ("reviewer", "auditor"):
        client.force_login(site[kind])
    return client


def _path(name: str, kwargs: list[str], site: dict[str, Any], value: str | None = None) -> str:
    values = {}
    for kwarg in kwargs:
        if name == "api:receipt":
            values[kwarg] = site["receipt"]
        elif name == "api:feedback-detail":
            values[kwarg] = site["feedback"]
        elif name.startswith("api:export-job-"):
            values[kwarg] = site["export_job"]
        else:
            values[kwarg] = site[kwarg]
    path = reverse(name, kwargs=values)
    if value is None:
        return path
    # The first path value replaced by one that names nothing, or is not a uuid at all.
    return path.replace(values[kwargs[0]], quote(value, safe=""), 1)


def _get(client: Client, path: str, query: dict[str, str]) -> int:
    encoded = urlencode({name: value.encode("utf-8", "surrogatepass") for name, value in query.items()})
    response = client.get(f"{path}?{encoded}" if encoded else path)
    return response.status_code


def test_every_page_and_endpoint_is_covered() -> None:
    names = {name for name, _ in ROUTES}
    # The reads a reviewer or a key makes every day are among them, so the walk above did find the URLconf.
    assert {"chats:conversation_list", "chats:thread", "api:conversation-list", "api:export"} <= names
    assert {"chats:export_jobs", "api:export-jobs", "api:export-job-detail", "api:export-job-download"} <= names


@pytest.mark.parametrize("caller", ["source", "reviewer", "auditor", "anonymous"])
def test_no_query_string_makes_any_get_fail(caller: str, site: dict[str, Any]) -> None:
    client = _client(caller, site)
    paths = [_path(name, kwargs, site) for name, kwargs in ROUTES]

    @QUERY
    @given(query=QUERIES)
    def check(query: dict[str, str]) -> None:
        for path in paths:
            status = _get(client, path, query)
            assert status < 500, (path, query, status)

    check()


@pytest.mark.parametrize("caller", ["source", "reviewer"])
def test_no_path_value_makes_any_get_fail(caller: str, site: dict[str, Any]) -> None:
    client = _client(caller, site)
    with_values = [(name, kwargs) for name, kwargs in ROUTES if kwargs]

    @QUERY
    @given(value=st.one_of(st.text(min_size=1, max_size=60).filter(lambda text: "/" not in text), EDGE_VALUES))
    def check(value: str) -> None:
        for name, kwargs in with_values:
            if "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value):
                continue  # not a URL a client can send
            status = client.get(_path(name, kwargs, site, value)).status_code
            assert status < 500, (name, value, status)

    check()


# --------------------------------------------------------------------------------------------------------------
# The crashes found by hand, as behaviour


def _export_format(path: str) -> dict[str, str]:
    return {"format": "openai"} if path.endswith("/export/") else {}


@pytest.mark.parametrize("path", ["/conversations/", "/api/v1/conversations/", "/api/v1/export/"])
def test_the_last_day_of_the_calendar_is_a_valid_end_date(path: str, site: dict[str, Any]) -> None:
    response = _client("reviewer", site).get(path, {"date_to": "9999-12-31", **_export_format(path)})
    assert response.status_code == 200
    if path == "/api/v1/conversations/":
        assert len(response.json()["results"]) == Conversation.objects.count()


def test_a_feedback_cursor_whose_position_is_not_a_number_is_a_400(site: dict[str, Any]) -> None:
    for position in ("abc", "9" * 30):
        response = _client("reviewer", site).get("/api/v1/feedback/", {"cursor": _drf(f"p={position}")})
        assert response.status_code == 400, position
        assert response.json()["errors"][0]["path"] == "/cursor"


def test_a_conversation_cursor_at_the_calendar_edge_is_a_400(site: dict[str, Any]) -> None:
    for raw in ("0001-01-01T00:00:00+23:59|1", "9999-12-31T23:59:59-23:59|1", f"2026-01-01T00:00:00+00:00|{2**70}"):
        response = _client("reviewer", site).get("/api/v1/conversations/", {"cursor": "n." + _b64(raw)})
        assert response.status_code == 400, raw
        page = _client("reviewer", site).get("/conversations/", {"cursor": _b64(raw)})
        assert page.status_code == 200, raw  # the page ignores a cursor it never gave out and shows the first page


@pytest.mark.parametrize("field, value", [("format", "f" * 300), ("external_id", "e" * 3000)])
def test_a_rejected_document_with_overlong_query_values_gets_a_receipt(
    field: str, value: str, site: dict[str, Any]
) -> None:
    response = _client("source", site).post(
        f"/api/v1/ingest/?{urlencode({field: value})}", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    receipt = IngestionReceipt.objects.get(uuid=response.json()["receipt"])
    assert receipt.outcome == "rejected"


@pytest.mark.parametrize("path", ["/api/v1/conversations/", "/api/v1/export/"])
def test_a_key_cannot_tell_another_sources_name_from_a_name_that_does_not_exist(
    path: str, site: dict[str, Any]
) -> None:
    client = _client("source", site)
    other = client.get(path, {"source": "beta", **_export_format(path)})
    missing = client.get(path, {"source": "no-such-source", **_export_format(path)})
    assert other.status_code == missing.status_code == 400
    assert other.json()["errors"][0]["message"] == missing.json()["errors"][0]["message"].replace(
        "no-such-source", "beta"
    )
    assert client.get(path, {"source": "alpha", **_export_format(path)}).status_code == 200


def test_a_person_may_filter_by_every_source_they_read(site: dict[str, Any]) -> None:
    # People with a reading role read every source: the list page offers every source that has conversations.
    make_conversation(Source.objects.get(name="beta"), n_messages=2)
    page = _client("reviewer", site).get("/conversations/", {"source": "beta"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="alpha"' in html and 'value="beta"' in html
    assert _client("reviewer", site).get("/api/v1/conversations/", {"source": "beta"}).json()["results"]


@pytest.mark.postgres
def test_the_search_probe_counts_only_the_callers_conversations(site: dict[str, Any]) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    beta = Source.objects.get(name="beta")
    make_conversation(beta, n_messages=4)
    client = _client("source", site)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/conversations/", {"q": "annealing"}).status_code == 200
    # Every statement that reads the vectors (the words' probes, and the list that reads the matches) is scoped.
    searching = [query["sql"] for query in queries.captured_queries if "_vector @@" in query["sql"]]
    assert searching
    alpha = Source.objects.get(name="alpha")
    for sql in searching:
        assert f'"source_id" = {alpha.pk}' in sql, sql


@pytest.mark.parametrize("parameter", ["at", "message"])
def test_a_message_number_past_any_row_id_names_no_message(parameter: str, site: dict[str, Any]) -> None:
    client = _client("reviewer", site)
    thread = reverse("chats:thread", kwargs={"uuid": site["uuid"]})
    path = thread if parameter == "at" else reverse("chats:feedback_form", kwargs={"uuid": site["uuid"]})
    for value in (str(2**63), "9" * 25):
        assert client.get(path, {parameter: value}).status_code in (200, 400, 404), value
