"""The conversations' filters (chats/filters/). The auditors' filters (workflow, has_warnings, feedback_origin,
model_setting, and policy's spellings) through the real stack: documents ingested over the API, then read back through
the conversation list API, the export API and the list page, which share one FilterSet; the list page's form, which
offers them (with the sources and labels it offers cached), keeps them in the pager's links and shows their errors
next to the field; and the search's match count, read from its own probe."""

from __future__ import annotations

import copy
import importlib
import json
import re
import time
from typing import Any
from uuid import UUID

import pytest
import yaml
from django.apps import apps
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from chats.filters.conversations import ConversationFilter
from chats.ingest.planner import workflow_of
from chats.models import Conversation, Source
from chats.selectors import filter_choices
from chats.selectors import search as search_selectors
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.labels import label_create, label_delete, label_update
from chats.services.sources import source_get_or_create
from tests import factories
from tests.factories import ingest, make_conversation, make_messages
from tests.factories.documents import load_fixture
from tests.factories.review import make_lead, make_queue

# engines: the model-setting filter and search take a branch per engine; CI runs this file again on SQLite.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]

MALFORMED_PROTOCOL = "protocol-12"  # not airalogy.id.lab.<lab>.project.<project>.protocol.<name>.v.<version>
WELL_FORMED_PROTOCOL = "airalogy.id.lab.zhang_lab.project.pcr_opt.protocol.touchdown_pcr.v.0.2.1"


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat(chat_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    document = {
        "chat_id": chat_id,
        "user_id": "airalogy.id.user.7",
        "model": "qwen3.5-flash",
        "main_messages": messages,
    }
    return document | extra


QUESTION = {"role": "user", "content": "Why are there nonspecific bands after my PCR?"}
ANSWER = {"role": "assistant", "content": "Raise the annealing temperature."}


def answered_call(call_id: str, arguments: str = '{"keywords": ["PCR"]}') -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": "", "tool_calls": [call(call_id, "airalogy_search", arguments)]},
        {"role": "tool", "tool_call_id": call_id, "content": '{"search_result": []}'},
    ]


def injection(call_id: str, protocol_id: str) -> list[dict[str, Any]]:
    arguments = json.dumps({"airalogy_protocol_ids": [protocol_id]})
    result = {"airalogy_protocols": [{"airalogy_protocol_id": protocol_id, "content": "…"}]}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call(call_id, "inject_airalogy_protocols", arguments)]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)},
    ]


# One conversation per warning kind, each with that warning alone; "clean" has none.
WARNING_DOCUMENTS: dict[str, dict[str, Any]] = {
    "clean": chat("clean", [QUESTION, *answered_call("c1"), ANSWER]),
    "unanswered_call": chat(
        "unanswered",
        [QUESTION, {"role": "assistant", "content": "", "tool_calls": [call("u1", "airalogy_search", "{}")]}],
    ),
    "orphan_result": chat("orphan", [QUESTION, {"role": "tool", "tool_call_id": "nobody", "content": "{}"}, ANSWER]),
    "invalid_arguments": chat("invalid", [QUESTION, *answered_call("i1", '{"keywords": [PCR'), ANSWER]),
    "malformed_artifact_id": chat("malformed", [QUESTION, *injection("m1", MALFORMED_PROTOCOL), ANSWER]),
}


def record_qa(chat_id: str, *, protocols_enabled: bool, listed: list[str]) -> dict[str, Any]:
    """Seed 001's shape: a context, and one well-formed protocol injected."""
    return {
        "chat_id": chat_id,
        "context": {"inject_airalogy_protocols": {"enabled": protocols_enabled, "airalogy_protocol_ids": listed}},
        "main_messages": [QUESTION, *injection("p1", WELL_FORMED_PROTOCOL), ANSWER],
    }


def post(client: APIClient, body: Any, format: str = "") -> str:
    url = "/api/v1/ingest/" + (f"?format={format}" if format else "")
    response = client.post(url, data=json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 201), response.json()
    uuid: str = response.json()["conversation"]
    return uuid


@pytest.fixture
def reader(api_client: APIClient, auditor: User) -> APIClient:
    api_client.force_login(auditor)  # auditors read and export
    return api_client


def listed(reader: APIClient, query: str) -> set[str]:
    response = reader.get(f"/api/v1/conversations/?{query}")
    assert response.status_code == 200, response.json()
    return {item["uuid"] for item in response.json()["results"]}


def exported(reader: APIClient, query: str) -> set[str]:
    response: Any = reader.get(f"/api/v1/export/?format=openai&envelope=true&{query}")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    return {json.loads(line)["conversation"] for line in body.splitlines() if line}


def on_page(client: Client, query: str, conversations: set[str]) -> set[str]:
    """Which of ``conversations`` the list page links to."""
    response = client.get(f"/conversations/?{query}")
    assert response.status_code == 200
    html = response.content.decode()
    return {uuid for uuid in conversations if f"/conversations/{uuid}/" in html}


def everywhere(reader: APIClient, page: Client, query: str, universe: set[str]) -> set[str]:
    """What the API finds for ``query``, having checked that the export and the list page find the same."""
    found = listed(reader, query)
    assert exported(reader, query) == found
    assert on_page(page, query, universe) == found
    return found


@pytest.fixture
def page(auditor: User) -> Client:
    client = Client()
    client.force_login(auditor)
    return client


# --- has_warnings ---


@pytest.fixture
def warned(ingest_client: APIClient) -> dict[str, str]:
    uuids = {name: post(ingest_client, document) for name, document in WARNING_DOCUMENTS.items()}
    uuids["policy_violation"] = post(
        ingest_client, record_qa("violation", protocols_enabled=False, listed=[]), "record_qa"
    )
    uuids["permitted"] = post(
        ingest_client, record_qa("permitted", protocols_enabled=True, listed=[WELL_FORMED_PROTOCOL]), "record_qa"
    )
    uuids["malformed_in_context"] = post(
        ingest_client,
        record_qa("listed", protocols_enabled=True, listed=[WELL_FORMED_PROTOCOL, MALFORMED_PROTOCOL]),
        "record_qa",
    )
    return uuids


@pytest.mark.parametrize(
    "kind", ["unanswered_call", "orphan_result", "invalid_arguments", "malformed_artifact_id", "policy_violation"]
)
def test_each_warning_kind_finds_the_conversations_with_that_warning_only(
    warned: dict[str, str], reader: APIClient, page: Client, kind: str
) -> None:
    expected = {warned[kind]}
    if kind == "malformed_artifact_id":  # an id listed by the context is judged like an injected one
        expected.add(warned["malformed_in_context"])

    assert everywhere(reader, page, f"has_warnings={kind}", set(warned.values())) == expected


def test_several_warning_kinds_find_the_conversations_with_any_of_them(
    warned: dict[str, str], reader: APIClient, page: Client
) -> None:
    found = everywhere(reader, page, "has_warnings=unanswered_call&has_warnings=orphan_result", set(warned.values()))

    assert found == {warned["unanswered_call"], warned["orphan_result"]}


def test_any_warning_finds_every_conversation_but_those_without_one(
    warned: dict[str, str], reader: APIClient, page: Client
) -> None:
    found = everywhere(reader, page, "has_warnings=any", set(warned.values()))

    assert found == set(warned.values()) - {warned["clean"], warned["permitted"]}


def test_an_answer_that_arrives_later_clears_the_unanswered_warning(
    warned: dict[str, str], ingest_client: APIClient, reader: APIClient
) -> None:
    grown = copy.deepcopy(WARNING_DOCUMENTS["unanswered_call"])
    grown["main_messages"] += [{"role": "tool", "tool_call_id": "u1", "content": "{}"}, ANSWER]
    post(ingest_client, grown)

    assert listed(reader, "has_warnings=unanswered_call") == set()


def test_an_unknown_warning_kind_is_a_400_that_names_the_parameter(reader: APIClient) -> None:
    response = reader.get("/api/v1/conversations/?has_warnings=spelling")

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/has_warnings"


# --- policy ---


def test_the_policy_filter_says_permitted_and_still_accepts_clean(
    warned: dict[str, str], reader: APIClient, page: Client
) -> None:
    judged = {warned["permitted"], warned["malformed_in_context"]}  # a malformed listed id is still permitted

    assert everywhere(reader, page, "policy=permitted", set(warned.values())) == judged
    assert listed(reader, "policy=clean") == judged
    assert listed(reader, "policy=violation") == {warned["policy_violation"]}


# --- workflow ---


def test_workflow_matches_the_scenarios_workflow_or_name_exactly(
    ingest_client: APIClient, reader: APIClient, page: Client
) -> None:
    base = [QUESTION, ANSWER]
    uuids = {
        "workflow": post(ingest_client, chat("w1", base, scenario={"workflow": "protocol_qa", "name": "other"})),
        "name": post(ingest_client, chat("w2", base, scenario={"name": "protocol_qa", "lab": "zhang_lab"})),
        "string": post(ingest_client, chat("w3", base, scenario="protocol_qa")),
        "another": post(ingest_client, chat("w4", base, scenario={"workflow": "protocol_qa_v2"})),
        "none": post(ingest_client, chat("w5", base)),
    }
    universe = set(uuids.values())

    assert everywhere(reader, page, "workflow=protocol_qa", universe) == {
        uuids["workflow"],
        uuids["name"],
        uuids["string"],
    }
    assert listed(reader, "workflow=other") == set()  # a scenario's workflow wins over its name
    assert listed(reader, "workflow=protocol_qa_v2") == {uuids["another"]}


def test_a_resend_that_changes_the_scenario_changes_the_workflow(ingest_client: APIClient, reader: APIClient) -> None:
    uuid = post(ingest_client, chat("w", [QUESTION, ANSWER], scenario={"workflow": "protocol_qa"}))
    post(ingest_client, chat("w", [QUESTION, ANSWER], scenario={"workflow": "record_qa"}))

    assert listed(reader, "workflow=protocol_qa") == set()
    assert listed(reader, "workflow=record_qa") == {uuid}


# --- feedback_origin ---


def test_feedback_origin_finds_conversations_with_feedback_from_that_origin(
    source: Source, ingest_client: APIClient, reader: APIClient, page: Client, reviewer: User
) -> None:
    masterbrain = post(ingest_client, chat("mb", [QUESTION, ANSWER], human_feedback=[{"score": 0}, {"score": 1}]))
    chatgpt_conversation = conversation_ingest(  # the import command's path: an export and its message feedback
        source=source,
        document=load_fixture("chatgpt_export/colony_pcr_branches_and_tools.json"),
        format="chatgpt_export",
        message_feedback=load_fixture("chatgpt_export/message_feedback.json"),
    ).conversation
    assert chatgpt_conversation is not None
    chatgpt = str(chatgpt_conversation.uuid)
    openwebui = post(ingest_client, load_fixture("openwebui/colony_pcr_regenerated_and_rated.json"), "openwebui")
    reviewed = make_conversation(source)
    feedback_submit(author=reviewer, conversation=reviewed, score=-1)
    without = make_conversation(source)
    universe = {masterbrain, chatgpt, openwebui, str(reviewed.uuid), str(without.uuid)}

    assert everywhere(reader, page, "feedback_origin=reviewer", universe) == {str(reviewed.uuid)}
    assert everywhere(reader, page, "feedback_origin=masterbrain", universe) == {masterbrain}
    assert everywhere(reader, page, "feedback_origin=chatgpt", universe) == {chatgpt}
    assert everywhere(reader, page, "feedback_origin=openwebui", universe) == {openwebui}
    assert reader.get("/api/v1/conversations/?feedback_origin=someone").status_code == 400


# --- model_setting ---


@pytest.fixture
def models(ingest_client: APIClient) -> dict[str, str]:
    settings = {
        "thinking": {"name": "qwen3.5-flash", "enable_thinking": True, "temperature": 0.3},
        "not_thinking": {"name": "qwen3.5-plus", "enable_thinking": False},
        "quoted": {"name": "custom", "enable_thinking": "true", "mode": "fast"},
        "named": "gpt-4.1-mini",
    }
    return {
        name: post(ingest_client, chat(f"model-{name}", [QUESTION, ANSWER]) | {"model": model})
        for name, model in settings.items()
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("enable_thinking=true", {"thinking"}),
        ("enable_thinking=false", {"not_thinking"}),
        ('enable_thinking="true"', {"quoted"}),  # a JSON string is a string
        ("temperature=0.3", {"thinking"}),
        ("mode=fast", {"quoted"}),  # not JSON: read as the string it is
        ("name=qwen3.5-plus", {"not_thinking"}),
        ("enable_thinking=1", set()),
        ("absent=true", set()),
    ],
)
def test_model_setting_matches_the_model_as_given(
    models: dict[str, str], reader: APIClient, page: Client, query: str, expected: set[str]
) -> None:
    found = everywhere(reader, page, f"model_setting={query.replace('=', '%3D', 1)}", set(models.values()))

    assert found == {models[name] for name in expected}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("enable_thinking", "expected key=value"),
        ("=true", "expected key=value"),
        (" =true", "expected key=value"),
        ("k=" + "x" * 600, "at most 500 characters"),
    ],
)
def test_a_malformed_model_setting_is_a_400_that_names_the_parameter(reader: APIClient, value: str, why: str) -> None:
    response = reader.get("/api/v1/conversations/", {"model_setting": value})

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["path"] == "/model_setting" and why in error["message"]
    assert reader.get("/api/v1/export/", {"format": "openai", "model_setting": value}).status_code == 400


@pytest.mark.parametrize(
    "value", ["k=NaN", "k=1e999", 'k="\\u0000"', "k=" + "[" * 400, "k=" + "[" * 200 + "]" * 200, "k=" + "9" * 450]
)
def test_model_setting_values_the_database_cannot_compare_as_json_are_read_as_strings(
    models: dict[str, str], reader: APIClient, value: str
) -> None:
    response = reader.get("/api/v1/conversations/", {"model_setting": value})

    assert response.status_code == 200
    assert response.json()["results"] == []


# --- all together, and their cost ---


def test_the_new_filters_combine(ingest_client: APIClient, reader: APIClient) -> None:
    document = chat("all", [QUESTION, *injection("m1", MALFORMED_PROTOCOL), ANSWER], scenario={"workflow": "qa"})
    document |= {"model": {"name": "qwen3.5-flash", "enable_thinking": True}, "human_feedback": [{"score": 1}] * 4}
    uuid = post(ingest_client, document)
    post(ingest_client, WARNING_DOCUMENTS["malformed_artifact_id"])

    query = "workflow=qa&has_warnings=malformed_artifact_id&feedback_origin=masterbrain"
    assert listed(reader, f"{query}&model_setting=enable_thinking%3Dtrue") == {uuid}
    assert listed(reader, f"{query}&model_setting=enable_thinking%3Dfalse") == set()


ALL_FILTERS = (
    "workflow=qa&has_warnings=any&feedback_origin=masterbrain&model_setting=enable_thinking%3Dtrue&policy=permitted"
)


def _matching(number: int) -> dict[str, Any]:
    document = record_qa(f"match-{number}", protocols_enabled=True, listed=[MALFORMED_PROTOCOL])
    return document | {
        "scenario": {"workflow": "qa"},
        "model": {"name": "qwen3.5-flash", "enable_thinking": True},
        "human_feedback": [{"score": 1}] * 4,
        "main_messages": [QUESTION, *injection("m1", MALFORMED_PROTOCOL), ANSWER],
    }


def test_the_filters_take_the_same_queries_for_one_conversation_and_many(
    ingest_client: APIClient, reader: APIClient, page: Client, django_assert_num_queries: Any
) -> None:
    post(ingest_client, _matching(0), "record_qa")
    with django_assert_num_queries(4):  # session, user, groups, conversations
        assert len(reader.get(f"/api/v1/conversations/?{ALL_FILTERS}").json()["results"]) == 1
    page.get("/conversations/")  # the sources and labels the form offers, cached
    # session, user, groups, conversations, their count, the saved views
    with django_assert_num_queries(6):
        assert page.get(f"/conversations/?{ALL_FILTERS}").status_code == 200

    for number in range(1, 15):
        post(ingest_client, _matching(number), "record_qa")
    with django_assert_num_queries(4):
        assert len(reader.get(f"/api/v1/conversations/?{ALL_FILTERS}").json()["results"]) == 15
    with django_assert_num_queries(6):
        assert page.get(f"/conversations/?{ALL_FILTERS}").status_code == 200


def test_the_filters_see_only_the_callers_conversations(
    ingest_client: APIClient, other_ingest_key: str, reader: APIClient
) -> None:
    mine = post(ingest_client, _matching(0), "record_qa")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    theirs = post(other, _matching(1), "record_qa")

    response = ingest_client.get(f"/api/v1/conversations/?{ALL_FILTERS}")

    assert {item["uuid"] for item in response.json()["results"]} == {mine}
    assert listed(reader, ALL_FILTERS) == {mine, theirs}
    assert Conversation.objects.filter(workflow="qa").count() == 2


# --- the schema ---


def test_the_schema_documents_the_new_filters_on_the_list_and_the_export(reader: APIClient) -> None:
    schema = yaml.safe_load(reader.get("/api/v1/schema/").content)

    for path in ("/api/v1/conversations/", "/api/v1/export/"):
        parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
        assert parameters["has_warnings"]["schema"]["type"] == "array"
        assert set(parameters["has_warnings"]["schema"]["items"]["enum"]) == {
            "any",
            "unanswered_call",
            "orphan_result",
            "invalid_arguments",
            "malformed_artifact_id",
            "policy_violation",
        }
        assert parameters["policy"]["schema"]["enum"] == ["no_context", "permitted", "violation"]
        assert set(parameters["feedback_origin"]["schema"]["enum"]) == {
            "reviewer",
            "masterbrain",
            "chatgpt",
            "openwebui",
        }
        assert "enable_thinking=true" in parameters["model_setting"]["description"]
        assert "`workflow`, else its `name`" in parameters["workflow"]["description"]


# --- the workflow column ---


@pytest.mark.parametrize(
    ("scenario", "workflow"),
    [
        ({"workflow": "protocol_qa", "name": "other"}, "protocol_qa"),
        ({"workflow": 3, "name": "named"}, "named"),
        ({"lab": "zhang_lab"}, ""),
        ("  cell_culture_troubleshooting ", "cell_culture_troubleshooting"),
        (None, ""),
        (["protocol_qa"], ""),
        ({"workflow": "x" * 201}, ""),
    ],
)
def test_the_workflow_of_a_scenario(scenario: Any, workflow: str) -> None:
    assert workflow_of(scenario) == workflow


def test_the_migration_fills_in_the_workflow_of_conversations_stored_before(ingest_client: APIClient) -> None:
    named = post(ingest_client, chat("w1", [QUESTION, ANSWER], scenario={"name": "lab_assistant"}))
    post(ingest_client, chat("w2", [QUESTION, ANSWER]))
    Conversation.objects.update(workflow="")  # as migration 0010 finds them

    importlib.import_module("chats.migrations.0011_audit_filters").fill_workflows(apps, None)

    assert dict(Conversation.objects.values_list("uuid", "workflow")) == {
        UUID(named): "lab_assistant",
        Conversation.objects.get(external_id="w2").uuid: "",
    }


# --- the list page's form: the filters offered, kept in the pager's links, and their errors next to the field ---


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def thinking(source: Source, number: int, *, enable_thinking: bool) -> None:
    ingest(
        source,
        {
            "chat_id": f"chat-{enable_thinking}-{number}",
            "model": {"name": "qwen3.5-flash", "enable_thinking": enable_thinking},
            "scenario": {"workflow": "protocol_qa"},
            "main_messages": make_messages(2, with_tools=False),
        },
        format="chat_document",
    )


def test_the_form_offers_every_new_filter_with_its_choices(client: Client, reviewer: User) -> None:
    html = signed_in(client, reviewer).get("/conversations/").content.decode()

    for name in ("workflow", "has_warnings", "feedback_origin", "model_setting", "policy"):
        assert f'name="{name}"' in html
    for value in ("unanswered_call", "orphan_result", "invalid_arguments", "malformed_artifact_id", "any"):
        assert f'value="{value}"' in html
    assert '<option value="permitted"' in html and '<option value="clean"' not in html
    assert '<option value="openwebui"' in html


def test_the_page_lists_what_the_filters_find_and_its_links_keep_them(
    client: Client, reviewer: User, source: Source
) -> None:
    for number in range(3):
        thinking(source, number, enable_thinking=True)
    thinking(source, 9, enable_thinking=False)
    query = "workflow=protocol_qa&has_warnings=any&has_warnings=orphan_result&model_setting=enable_thinking%3Dtrue"

    found: Any = signed_in(client, reviewer).get(
        "/conversations/?workflow=protocol_qa&model_setting=enable_thinking%3Dtrue"
    )
    none: Any = client.get(f"/conversations/?{query}")

    assert sorted(c.external_id for c in found.context["page"].conversations) == [f"chat-True-{n}" for n in range(3)]
    assert none.context["page"].conversations == []
    # The pager, the review queue and the feedback forms link back with every filter, repeated ones included.
    assert none.context["list_query"] == query
    assert 'value="enable_thinking=true"' in none.content.decode()


def test_a_malformed_model_setting_is_shown_next_to_its_field(client: Client, reviewer: User) -> None:
    response = signed_in(client, reviewer).get("/conversations/?model_setting=enable_thinking")

    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="id_model_setting_error"' in html and "expected key=value" in html


# --- the search's match count (PostgreSQL: the probe of the GIN index) ---

COUNT = re.compile(r'<p class="muted" id="search-count">(.*?)</p>', re.S)


def _count(client: Client, query: str) -> str | None:
    response = client.get(f"/conversations/?{query}")
    assert response.status_code == 200
    found = COUNT.search(response.content.decode())
    return found.group(1) if found else None


@pytest.mark.postgres
def test_a_search_says_how_many_conversations_match(client: Client, reviewer: User, source: Source) -> None:
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    factories.make_conversation(source, n_messages=4, topic="electrophoresis")
    factories.make_conversation(source, n_messages=4, topic="photobleaching")

    assert _count(client, "q=photobleaching") == "3 conversations match the search."
    assert _count(client, "q=electrophoresis") == "1 conversation matches the search."
    assert _count(client, "q=photobleaching&model=qwen3.5-flash") == (
        "3 conversations match the search and the other filters."
    )
    assert _count(client, "q=nowhere") is None  # the list says that nothing matches
    assert _count(client, "") is None


@pytest.mark.postgres
def test_past_the_probe_the_search_count_says_more_than(
    client: Client, reviewer: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_selectors, "SEARCH_PROBE_LIMIT", 2)
    # The probe reads every message (whatever the statistics estimate), and finds more conversations than 2.
    monkeypatch.setattr(search_selectors, "MESSAGE_PROBE_FACTOR", 10**6)
    for _ in range(3):
        factories.make_conversation(source, n_messages=4, topic="photobleaching")
    client.force_login(reviewer)

    response = client.get("/conversations/?q=photobleaching")

    assert COUNT.search(response.content.decode()).group(1) == "More than 2 conversations match the search."  # type: ignore[union-attr]
    assert len(response.context["page"].conversations) == 3


@pytest.mark.postgres
def test_the_search_probe_leaves_the_planner_settings_as_they_were(
    client: Client, reviewer: User, source: Source
) -> None:
    from django.db import connection

    factories.make_conversation(source, n_messages=4, topic="photobleaching")
    client.force_login(reviewer)
    # The test runs in a transaction, as a request in ATOMIC_REQUESTS would: the probe's SET LOCAL must not outlive it.
    assert _count(client, "q=photobleaching") == "1 conversation matches the search."
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone() == ("on",)


# --- the sources and labels the list page's form offers, cached ---


def _offered(client: Client, name: str) -> list[str]:
    html = client.get("/conversations/").content.decode()
    select = re.search(rf'<select name="{name}".*?</select>', html, re.S)
    assert select is not None
    return re.findall(r'<option value="([^"]*)"', select.group(0))[1:]  # after "Any ..."


def test_a_label_created_renamed_or_deleted_is_offered_as_it_is_at_once(client: Client, reviewer: User) -> None:
    client.force_login(reviewer)
    assert _offered(client, "label") == []  # and cached

    helpful = label_create(name="helpful")
    assert _offered(client, "label") == ["helpful"]
    label_update(label=helpful, name="useful", description="")
    label_create(name="wrong")
    assert _offered(client, "label") == ["useful", "wrong"]
    label_delete(label=helpful)
    assert _offered(client, "label") == ["wrong"]


def test_a_source_is_offered_once_the_cache_has_expired_and_filters_at_once(
    client: Client, reviewer: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filter_choices, "CHOICES_SECONDS", 1)
    client.force_login(reviewer)
    factories.make_conversation(source, n_messages=2)
    assert _offered(client, "source") == [source.name]

    newcomer, _ = source_get_or_create(name="newcomer")
    first = factories.make_conversation(newcomer, n_messages=2)
    assert _offered(client, "source") == [source.name]  # the cached choices, for at most CHOICES_SECONDS
    # What the filter accepts is read from the database: the new source filters already.
    page = client.get("/conversations/?source=newcomer").context["page"]
    assert [c.pk for c in page.conversations] == [first.pk]

    # The cached choices expire after CHOICES_SECONDS: wait for that (bounded), then the newcomer is offered.
    deadline = time.monotonic() + 10
    while cache.get(filter_choices.CHOICES_KEY) is not None:
        assert time.monotonic() < deadline, "the cached choices never expired"
        time.sleep(0.05)
    assert _offered(client, "source") == sorted([source.name, "newcomer"])


def test_a_source_without_conversations_is_not_offered(client: Client, reviewer: User, source: Source) -> None:
    client.force_login(reviewer)
    source_get_or_create(name="silent")
    factories.make_conversation(source, n_messages=2)
    assert _offered(client, "source") == [source.name]
    # Refused as a name that does not exist is: the source filter accepts the sources with conversations.
    assert 'id="id_source_error"' in client.get("/conversations/?source=silent").content.decode()


@pytest.mark.parametrize("data", [None, {"source": "masterbrain", "label": "wrong <answer>"}])
def test_the_cached_choices_draw_the_selects_the_database_would(source: Source, data: Any) -> None:
    factories.make_conversation(source, n_messages=2)
    factories.make_labels("helpful", "wrong <answer>")
    read = ConversationFilter(data, queryset=Conversation.objects.all())
    cached = ConversationFilter(data, queryset=Conversation.objects.all())
    cached.offer_cached_choices()
    for name in ("source", "label"):
        assert str(cached.form[name]) == str(read.form[name])


# --- one validation for every path: booleans as documented, values that can be stored ---


@pytest.mark.parametrize("value", ["no", "maybe", "yes", "True", "2"])
def test_a_boolean_filter_refuses_a_value_that_is_not_true_or_false(reader: APIClient, value: str) -> None:
    response = reader.get(f"/api/v1/conversations/?has_tool_calls={value}")
    assert response.status_code == 400
    assert [error["path"] for error in response.json()["errors"]] == ["/has_tool_calls"]


def test_a_boolean_filter_reads_one_and_zero_as_true_and_false(ingest_client: APIClient, reader: APIClient) -> None:
    with_tools = post(ingest_client, chat("tools", [QUESTION, *answered_call("call-1")]))
    without = post(ingest_client, chat("plain", [QUESTION, ANSWER]))
    assert listed(reader, "has_tool_calls=1") == listed(reader, "has_tool_calls=true") == {with_tools}
    assert listed(reader, "has_tool_calls=0") == listed(reader, "has_tool_calls=false") == {without}
    assert listed(reader, "has_tool_calls=") == {with_tools, without}


def test_the_feedback_filter_mine_refuses_a_value_that_is_not_true_or_false(reader: APIClient) -> None:
    response = reader.get("/api/v1/feedback/?mine=maybe")
    assert response.status_code == 400
    assert [error["path"] for error in response.json()["errors"]] == ["/mine"]


def test_the_list_page_refuses_a_boolean_filter_that_is_not_true_or_false(page: Client) -> None:
    response = page.get("/conversations/?has_tool_calls=maybe")
    assert response.status_code == 400
    assert "has_tool_calls" in response.content.decode()
    assert "Must be true or false" in response.content.decode()


@pytest.mark.parametrize(
    ("filters", "path"),
    [
        ({"has_tool_calls": "maybe"}, "/filters/has_tool_calls"),
        ({"user": "a\x00b"}, "/filters/user"),
        ({"user": "\ud800"}, "/filters/user"),
        ({"source": "\ud800"}, "/filters/source"),
        ({"has_warnings": ["any", "\x00"]}, "/filters/has_warnings"),
        ({"us\x00er": "x"}, "/filters/us\\u0000er"),
    ],
)
def test_rule_and_export_job_filters_are_checked_by_the_lists_filterset(
    api_client: APIClient, auditor: User, filters: dict[str, Any], path: str
) -> None:
    lead = make_lead()
    queue = make_queue(lead, [])
    api_client.force_login(lead)
    body = json.dumps({"name": "r", "filters": filters})  # \u escapes: a lone surrogate is valid JSON
    rule = api_client.post(f"/api/v1/queues/{queue.pk}/rules/", body, content_type="application/json")
    assert rule.status_code == 400, rule.content
    assert [error["path"].removesuffix("/1") for error in rule.json()["errors"]] == [path]
    api_client.force_login(auditor)
    body = json.dumps({"format": "openai", "filters": filters})
    job = api_client.post("/api/v1/export/jobs/", body, content_type="application/json")
    assert job.status_code == 400, job.content
    assert [error["path"] for error in job.json()["errors"]] == [path]
