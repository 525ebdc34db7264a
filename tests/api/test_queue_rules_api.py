"""The queue rules API: leads create, change, run and delete a queue's rules; auditors read them; reviewers and
sources' keys may not; invalid filters answer 400 naming the parameter; a run adds the sample once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from chats.models import AuditEvent, Conversation, Queue, QueueItem, QueueRule, QueueRuleRun, Source
from chats.review.sampling import rule_takes
from chats.services.bulk_writer import conversations_ingest_bulk
from tests.factories import make_messages
from tests.factories.review import make_lead, make_queue

pytestmark = pytest.mark.django_db


def client_of(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def send(client: APIClient, method: str, url: str, body: Any = None) -> Any:
    return client.generic(method, url, data=json.dumps(body or {}), content_type="application/json")


def error_paths(response: Any) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User) -> Queue:
    return make_queue(lead, [reviewer])


def rules_url(queue: Queue) -> str:
    return f"/api/v1/queues/{queue.pk}/rules/"


def test_a_lead_creates_changes_runs_and_deletes_a_rule(lead: User, queue: Queue, source: Source) -> None:
    conversations_ingest_bulk(
        source=source,
        documents=[
            {"chat_id": f"c-{n}", "main_messages": make_messages(6 if n % 2 else 2, with_tools=n % 2 == 1)}
            for n in range(60)
        ],
    )
    client = client_of(lead)
    body = {"name": "Searches", "filters": {"tool_name": "airalogy_search"}, "sample_rate": 0.5}
    created = send(client, "POST", rules_url(queue), body)
    assert created.status_code == 201, created.json()
    rule = created.json()
    assert {key: rule[key] for key in ("name", "filters", "sample_rate", "enabled", "created_by")} == {
        "name": "Searches",
        "filters": {"tool_name": "airalogy_search"},
        "sample_rate": 0.5,
        "enabled": True,
        "created_by": "lena",
    }
    stored = QueueRule.objects.get()
    run = send(client, "POST", f"{rules_url(queue)}{rule['id']}/run/")
    sampled = {
        c.pk
        for c in Conversation.objects.filter(tool_call_count__gt=0)
        if rule_takes(stored.pk, c.uuid, stored.sample_rate)
    }
    assert run.status_code == 202
    record = run.json()
    assert {key: record[key] for key in ("rule", "state", "added", "error", "requested_by")} == {
        "rule": rule["id"],
        "state": "done",
        "added": len(sampled),
        "error": "",
        "requested_by": "lena",
    }
    assert run["Location"] == record["url"] == f"{rules_url(queue)}{rule['id']}/runs/{record['id']}/"
    assert client.get(record["url"]).json() == record
    assert set(QueueItem.objects.filter(queue=queue).values_list("conversation_id", flat=True)) == sampled
    again = send(client, "POST", f"{rules_url(queue)}{rule['id']}/run/").json()
    assert (again["state"], again["added"]) == ("done", 0)
    assert again["id"] != record["id"]

    changed = send(client, "PATCH", f"{rules_url(queue)}{rule['id']}/", {"enabled": False})
    assert changed.status_code == 200
    assert changed.json()["enabled"] is False and changed.json()["sample_rate"] == 0.5
    assert [r["name"] for r in client.get(rules_url(queue)).json()] == ["Searches"]
    assert send(client, "DELETE", f"{rules_url(queue)}{rule['id']}/").status_code == 204
    assert client.get(rules_url(queue)).json() == []
    assert QueueItem.objects.filter(queue=queue).count() == len(sampled)  # what it added stays
    actions = AuditEvent.objects.filter(target_type="queue_rule").order_by("id").values_list("action", flat=True)
    assert list(actions) == [
        "queue_rule.created",
        "queue_rule.ran",
        "queue_rule.ran",
        "queue_rule.updated",
        "queue_rule.deleted",
    ]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"name": "Bad", "filters": {"format": "nonsense"}}, "/filters/format"),
        ({"name": "Bad", "filters": {"date_to": "tomorrow"}}, "/filters/date_to"),
        ({"name": "Bad", "filters": {"tool": "x"}}, "/filters/tool"),
        ({"name": "Bad", "filters": {}, "sample_rate": 0}, "/sample_rate"),
        ({"name": "Bad", "filters": {}, "sample_rate": 2}, "/sample_rate"),
        ({"filters": {}}, "/name"),
    ],
)
def test_an_invalid_rule_answers_400_naming_the_parameter(
    lead: User, queue: Queue, body: dict[str, Any], path: str
) -> None:
    response = send(client_of(lead), "POST", rules_url(queue), body)
    assert response.status_code == 400
    assert error_paths(response) == [path]
    assert not QueueRule.objects.exists()


def test_a_patch_with_invalid_filters_answers_400_and_changes_nothing(lead: User, queue: Queue) -> None:
    client = client_of(lead)
    rule = send(client, "POST", rules_url(queue), {"name": "All", "filters": {}}).json()
    response = send(client, "PATCH", f"{rules_url(queue)}{rule['id']}/", {"filters": {"status": "done"}})
    assert response.status_code == 400
    assert error_paths(response) == ["/filters/status"]
    assert QueueRule.objects.get().filters == {}


def test_only_leads_write_rules_and_only_leads_and_auditors_read_them(
    lead: User, queue: Queue, reviewer: User, auditor: User, ingest_client: APIClient
) -> None:
    rule = send(client_of(lead), "POST", rules_url(queue), {"name": "All", "filters": {}}).json()
    one = f"{rules_url(queue)}{rule['id']}/"
    assert client_of(auditor).get(rules_url(queue)).status_code == 200
    for client in (client_of(reviewer), ingest_client, APIClient()):
        assert client.get(rules_url(queue)).status_code in (401, 403)
    for client in (client_of(reviewer), client_of(auditor), ingest_client, APIClient()):
        assert send(client, "POST", rules_url(queue), {"name": "Mine", "filters": {}}).status_code in (401, 403)
        assert send(client, "PATCH", one, {"enabled": False}).status_code in (401, 403)
        assert send(client, "DELETE", one).status_code in (401, 403)
        assert send(client, "POST", f"{one}run/").status_code in (401, 403)
    assert QueueRule.objects.get().enabled is True
    assert not QueueRuleRun.objects.exists()
    run = send(client_of(lead), "POST", f"{one}run/").json()
    assert client_of(auditor).get(run["url"]).status_code == 200
    for client in (client_of(reviewer), ingest_client, APIClient()):
        assert client.get(run["url"]).status_code in (401, 403)


def test_a_run_of_a_rule_whose_filters_no_longer_validate_is_refused(lead: User, queue: Queue, source: Source) -> None:
    client = client_of(lead)
    rule = send(client, "POST", rules_url(queue), {"name": "By source", "filters": {"source": source.name}}).json()
    source.delete()
    response = send(client, "POST", f"{rules_url(queue)}{rule['id']}/run/")
    assert response.status_code == 400
    assert error_paths(response) == ["/filters/source"]
    assert not QueueRuleRun.objects.exists()


def test_a_rule_of_another_queue_is_not_found(lead: User, queue: Queue) -> None:
    other = make_queue(lead, [], name="Other")
    client = client_of(lead)
    rule = send(client, "POST", rules_url(other), {"name": "All", "filters": {}}).json()
    assert send(client, "PATCH", f"{rules_url(queue)}{rule['id']}/", {"enabled": False}).status_code == 404
    assert send(client, "POST", f"{rules_url(queue)}{rule['id']}/run/").status_code == 404
    run = send(client, "POST", f"{rules_url(other)}{rule['id']}/run/").json()
    assert client.get(f"{rules_url(queue)}{rule['id']}/runs/{run['id']}/").status_code == 404
    assert client.get("/api/v1/queues/999999/rules/").status_code == 404
