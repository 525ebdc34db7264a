"""The read API of chats/api/views.py: GET /api/v1/conversations/, /conversations/<uuid>/ (whole, or in windows of
the active path), /artifacts/ and /labels/: who may read what, filters, search, cursor pagination, and query counts
that do not grow with the data."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from chats.models import Conversation, InjectedArtifact, Label, Message, ToolCall
from chats.selectors.threads import WINDOW_LIMIT_MAX, WINDOW_SIZE
from chats.services.feedback import feedback_submit
from chats.services.review import conversation_set_review_status
from chats.services.sources import api_key_create, api_key_revoke
from tests.factories import (
    last_assistant,
    make_chatgpt_branches,
    make_conversation,
    make_labels,
    make_record_qa,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(api_client: APIClient, reviewer: Any) -> APIClient:
    api_client.force_login(reviewer)
    return api_client


def token_client(user: Any) -> APIClient:
    _, raw = api_key_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")
    return client


def uuids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [item["uuid"] for item in response.json()["results"]]


# --- who may read ---


def test_anonymous_gets_401_with_the_scheme_to_use(source: Any, api_client: APIClient) -> None:
    make_conversation(source)

    response = api_client.get("/api/v1/conversations/")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Api-Key"
    assert response.json()["errors"][0]["path"] == ""


@pytest.mark.parametrize(
    "url", ["/api/v1/conversations/", "/api/v1/labels/", "/api/v1/artifacts/", "/api/v1/feedback/"]
)
def test_a_user_without_a_role_is_refused(api_client: APIClient, no_role_user: Any, url: str) -> None:
    api_client.force_login(no_role_user)

    assert api_client.get(url).status_code == 403
    assert token_client(no_role_user).get(url).status_code == 403


def test_personal_tokens_of_reviewers_and_auditors_read(source: Any, reviewer: Any, auditor: Any) -> None:
    conversation = make_conversation(source)

    for user in (reviewer, auditor):
        assert uuids(token_client(user).get("/api/v1/conversations/")) == [str(conversation.uuid)]


def test_staff_reads_with_a_session(source: Any, api_client: APIClient, admin_user: Any) -> None:
    make_conversation(source)
    api_client.force_login(admin_user)

    assert len(uuids(api_client.get("/api/v1/conversations/"))) == 1


def test_a_revoked_token_is_refused(source: Any, reviewer: Any) -> None:
    key, raw = api_key_create(user=reviewer)
    api_key_revoke(key=key)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")

    assert client.get("/api/v1/conversations/").status_code == 401


def test_a_source_key_reads_only_its_own_source(source: Any, other_source: Any, ingest_client: APIClient) -> None:
    mine, theirs = make_conversation(source), make_conversation(other_source)

    assert uuids(ingest_client.get("/api/v1/conversations/")) == [str(mine.uuid)]
    assert ingest_client.get(f"/api/v1/conversations/{mine.uuid}/").status_code == 200
    assert ingest_client.get(f"/api/v1/conversations/{theirs.uuid}/").status_code == 404


def test_an_unknown_or_malformed_uuid_is_a_json_404(reader: APIClient) -> None:
    for uuid in ("0b8f9a57-8f1e-4a44-9d0f-0d1c3b1c2a11", "not-a-uuid"):
        response = reader.get(f"/api/v1/conversations/{uuid}/")
        assert response.status_code == 404 and response.json()["errors"][0]["message"]


# --- the list: filters and search ---


def test_the_list_has_summaries_and_no_messages(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, title="Touchdown PCR")

    [item] = reader.get("/api/v1/conversations/").json()["results"]

    assert item["uuid"] == str(conversation.uuid) and item["source"] == "masterbrain"
    assert item["title"] == "Touchdown PCR" and item["format"] == "chat_document"
    assert item["message_count"] == conversation.message_count and item["tool_call_count"] > 0
    assert item["feedback_summary"] == {"count": 0, "score_up": 0, "score_down": 0}
    assert "messages" not in item


def test_the_shared_filters_apply(source: Any, other_source: Any, reader: APIClient, reviewer: Any) -> None:
    make_labels("helpful")
    plain = make_conversation(source, with_tools=False, model="small", user_id="u-1", start_time="2024-03-01T10:00:00Z")
    tools = make_conversation(source, model="qwen3.5-flash", start_time="2024-05-01T10:00:00Z")
    record = make_record_qa(other_source)
    feedback_submit(author=reviewer, conversation=tools, score=-1, labels=[Label.objects.get(name="helpful")])
    conversation_set_review_status(actor=reviewer, conversation=plain, status="reviewed")
    artifact = InjectedArtifact.objects.filter(conversation=record).first()
    assert artifact is not None

    def listed(query: str) -> set[str]:
        return set(uuids(reader.get(f"/api/v1/conversations/?{query}")))

    assert listed("model=small") == {str(plain.uuid)}
    assert listed("user=u-1") == {str(plain.uuid)}
    assert listed("source=other-logger") == {str(record.uuid)}
    assert listed("format=record_qa") == {str(record.uuid)}
    assert listed("has_tool_calls=false") == {str(plain.uuid)}
    assert listed("tool_name=airalogy_search") == {str(tools.uuid)}
    assert listed(f"artifact_id={artifact.artifact_id}") == {str(record.uuid)}
    assert listed(f"artifact_kind={artifact.kind}") == {str(record.uuid)}
    assert listed("status=reviewed") == {str(plain.uuid)}
    assert listed("score=-1") == {str(tools.uuid)}
    assert listed("label=helpful") == {str(tools.uuid)}
    assert listed("date_from=2024-04-01&date_to=2024-05-01") == {str(tools.uuid)}
    assert listed("role=tool&model=qwen3.5-flash") == {str(tools.uuid)}


def test_full_text_search_finds_message_text(source: Any, reader: APIClient) -> None:
    gel = make_conversation(source, topic="agarose electrophoresis")
    make_conversation(source, topic="centrifuge")

    assert uuids(reader.get("/api/v1/conversations/?q=electrophoresis")) == [str(gel.uuid)]


@pytest.mark.parametrize("probe_limit", [100, 2], ids=["few-matches-read-by-id", "many-matches-walk-by-time"])
def test_search_pages_its_matches_newest_first_however_many_match(
    source: Any, reader: APIClient, probe_limit: int, monkeypatch: Any
) -> None:
    # Either way the search is planned (few matches or more than the probe reads), the answer is the same.
    monkeypatch.setattr("chats.selectors.search.SEARCH_PROBE_LIMIT", probe_limit)
    matches = [make_conversation(source, topic=f"agarose electrophoresis run {n}") for n in range(5)]
    make_conversation(source, topic="centrifuge")
    newest_first = sorted(matches, key=lambda c: (c.last_activity_at, c.pk), reverse=True)

    first = reader.get("/api/v1/conversations/?q=electrophoresis&page_size=3")
    rest = reader.get(first.json()["next"])

    assert uuids(first) + uuids(rest) == [str(c.uuid) for c in newest_first]


def test_an_invalid_filter_is_a_400_naming_the_parameter(reader: APIClient) -> None:
    response = reader.get("/api/v1/conversations/?score=5&date_from=yesterday")

    assert response.status_code == 400
    assert {error["path"] for error in response.json()["errors"]} == {"/score", "/date_from"}


# --- cursor pagination ---


def _follow(client: APIClient, url: str) -> list[str]:
    seen: list[str] = []
    while url:
        response = client.get(url)
        seen.extend(uuids(response))
        url = response.json()["next"]
    return seen


def test_cursor_pages_are_newest_first_and_go_back(source: Any, reader: APIClient) -> None:
    made = [make_conversation(source, start_time=f"2024-01-{day:02d}T00:00:00Z") for day in range(1, 6)]
    newest_first = [str(c.uuid) for c in reversed(made)]

    first = reader.get("/api/v1/conversations/?page_size=2").json()
    second = reader.get(first["next"]).json()

    assert [item["uuid"] for item in first["results"]] == newest_first[:2]
    assert [item["uuid"] for item in second["results"]] == newest_first[2:4]
    assert first["previous"] is None
    assert [item["uuid"] for item in reader.get(second["previous"]).json()["results"]] == newest_first[:2]
    assert _follow(reader, "/api/v1/conversations/?page_size=2") == newest_first


def test_cursor_pagination_is_stable_while_new_conversations_arrive(source: Any, reader: APIClient) -> None:
    existing = [make_conversation(source) for _ in range(5)]
    page = reader.get("/api/v1/conversations/?page_size=2").json()
    seen = [item["uuid"] for item in page["results"]]

    # New conversations arrive (newer than everything, and one at an old start time) while the client pages.
    make_conversation(source)
    make_conversation(source, start_time="2000-01-01T00:00:00Z")
    seen += _follow(reader, page["next"])

    assert len(seen) == len(set(seen)), "a conversation was listed twice"
    assert {str(c.uuid) for c in existing} <= set(seen), "a conversation was skipped"


def test_a_forged_cursor_or_page_size_is_a_400(reader: APIClient) -> None:
    assert reader.get("/api/v1/conversations/?cursor=n.garbage").json()["errors"][0]["path"] == "/cursor"
    assert reader.get("/api/v1/conversations/?page_size=0").status_code == 400


# --- the detail ---


def test_the_detail_has_the_active_path_with_tool_calls_and_their_results(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=5, branches=1)

    body = reader.get(f"/api/v1/conversations/{conversation.uuid}/").json()

    assert body["branch"] == "active"
    path = list(Message.objects.filter(conversation=conversation, on_active_path=True).order_by("depth"))
    assert [m["key"] for m in body["messages"]] == [m.key for m in path]
    assert body["messages"][-1]["text"] == "Alternative answer 1."
    call = next(m for m in body["messages"] if m["tool_calls"])["tool_calls"][0]
    stored = ToolCall.objects.get(conversation=conversation, call_id=call["call_id"])
    assert call["name"] == "airalogy_search" and call["parsed_arguments"] == {"keywords": ["PCR"]}
    assert stored.result_message is not None
    assert call["result_message_key"] == stored.result_message.key
    tool_message = next(m for m in body["messages"] if m["key"] == call["result_message_key"])
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == call["call_id"]
    assert [m["parent_key"] for m in body["messages"][1:]] == [m["key"] for m in body["messages"][:-1]]


def test_branch_all_lists_every_message_of_the_tree(source: Any, reader: APIClient) -> None:
    conversation = make_chatgpt_branches(source)

    body = reader.get(f"/api/v1/conversations/{conversation.uuid}/?branch=all").json()

    assert len(body["messages"]) == Message.objects.filter(conversation=conversation).count()
    assert any(not m["on_active_path"] for m in body["messages"])
    assert reader.get(f"/api/v1/conversations/{conversation.uuid}/?branch=some").status_code == 400


def test_the_detail_has_artifacts_and_feedback(source: Any, reader: APIClient, reviewer: Any) -> None:
    conversation = make_record_qa(source)
    answer = last_assistant(conversation)
    feedback_submit(author=reviewer, conversation=conversation, message=answer, score=1, comment="ok")

    body = reader.get(f"/api/v1/conversations/{conversation.uuid}/").json()

    assert len(body["artifacts"]) == InjectedArtifact.objects.filter(conversation=conversation).count() > 0
    artifact = body["artifacts"][0]
    assert artifact["tool_call_id"] and artifact["message_key"] in {m["key"] for m in body["messages"]}
    [feedback] = body["feedback"]
    assert feedback["message"] == answer.key and feedback["author"] == "rita" and feedback["score"] == 1
    assert body["injection_context"] is not None and body["feedback_summary"]["score_up"] == 1


def test_list_queries_do_not_grow_with_the_number_of_conversations(
    source: Any, reader: APIClient, django_assert_num_queries: Any
) -> None:
    make_conversation(source)
    # session, user, groups, conversations
    with django_assert_num_queries(4):
        assert len(uuids(reader.get("/api/v1/conversations/"))) == 1

    for _ in range(49):
        make_conversation(source, n_messages=2, with_tools=False)
    with django_assert_num_queries(4):
        assert len(uuids(reader.get("/api/v1/conversations/"))) == 50


@pytest.mark.parametrize("n_messages", [5, 500])
def test_detail_queries_do_not_grow_with_the_number_of_messages(
    source: Any, reader: APIClient, reviewer: Any, django_assert_num_queries: Any, n_messages: int
) -> None:
    conversation = make_conversation(source, n_messages=n_messages)
    make_labels("helpful")
    feedback_submit(
        author=reviewer,
        conversation=conversation,
        message=last_assistant(conversation),
        score=1,
        labels=[Label.objects.get(name="helpful")],
    )

    # session, user, groups, conversation, the view recorded (read audit), messages, tool calls, artifacts,
    # feedback, their labels
    with django_assert_num_queries(10):
        response = reader.get(f"/api/v1/conversations/{conversation.uuid}/?branch=all")

    assert len(response.json()["messages"]) == n_messages


# --- artifacts and labels ---


def test_artifacts_lists_the_conversations_an_artifact_was_injected_into(
    source: Any, reader: APIClient, reviewer: Any
) -> None:
    make_labels("helpful")
    conversation = make_record_qa(source)
    make_conversation(source)
    artifact = InjectedArtifact.objects.filter(conversation=conversation).first()
    assert artifact is not None
    feedback_submit(author=reviewer, conversation=conversation, score=-1, labels=[Label.objects.get(name="helpful")])

    body = reader.get(f"/api/v1/artifacts/{artifact.artifact_id}/").json()

    [item] = body["results"]
    assert item["uuid"] == str(conversation.uuid)
    assert item["feedback_summary"] == {"count": 1, "score_up": 0, "score_down": 1}
    assert item["labels"] == {"helpful": 1}
    assert {injection["tool_name"] for injection in item["injections"]} == {artifact.tool_name}
    assert all(injection["kind"] == artifact.kind for injection in item["injections"])


def test_artifacts_without_an_artifact_id_lists_every_artifact(source: Any, reader: APIClient) -> None:
    conversation = make_record_qa(source)
    injected = set(InjectedArtifact.objects.filter(conversation=conversation).values_list("kind", "artifact_id"))

    response = reader.get("/api/v1/artifacts/")

    assert response.status_code == 200
    assert {(item["kind"], item["artifact_id"]) for item in response.json()["results"]} >= injected


def test_artifacts_are_scoped_for_a_source_key(other_source: Any, ingest_client: APIClient) -> None:
    conversation = make_record_qa(other_source)
    artifact = InjectedArtifact.objects.filter(conversation=conversation).first()
    assert artifact is not None

    assert ingest_client.get(f"/api/v1/artifacts/{artifact.artifact_id}/").status_code == 404


def test_labels_lists_the_taxonomy(reader: APIClient) -> None:
    Label.objects.create(name="hallucination", description="Invented facts")
    Label.objects.create(name="helpful")

    assert reader.get("/api/v1/labels/").json() == [
        {"name": "hallucination", "description": "Invented facts"},
        {"name": "helpful", "description": ""},
    ]


def test_conversations_are_ordered_like_the_review_list(source: Any, reader: APIClient) -> None:
    for _ in range(3):
        make_conversation(source)

    expected = [
        str(u) for u in Conversation.objects.order_by("-last_activity_at", "-id").values_list("uuid", flat=True)
    ]

    assert uuids(reader.get("/api/v1/conversations/")) == expected


def test_a_nul_character_in_a_query_parameter_gets_400_not_a_server_error(api_client, reviewer):
    api_client.force_authenticate(reviewer)

    response = api_client.get("/api/v1/artifacts/?artifact_id=abc%00def")

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "/query/artifact_id"


# --- the detail in windows of the active path: ?after=<position>&limit=, and where the next one starts ---


def detail(conversation: Conversation) -> str:
    return f"/api/v1/conversations/{conversation.uuid}/"


def test_reading_window_after_window_gives_the_whole_thread_once(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=25)
    whole = reader.get(detail(conversation)).json()
    assert "window" not in whole  # without after nor limit: the whole thread, as before windows

    keys: list[str] = []
    calls: list[str] = []
    url: str | None = f"{detail(conversation)}?limit=10"
    windows = []
    while url is not None:
        response = reader.get(url)
        assert response.status_code == 200, response.json()
        body = response.json()
        keys += [message["key"] for message in body["messages"]]
        calls += [call["call_id"] for message in body["messages"] for call in message["tool_calls"]]
        windows.append(body["window"])
        url = body["window"]["next"]
    assert keys == [message["key"] for message in whole["messages"]]
    assert calls == [call["call_id"] for message in whole["messages"] for call in message["tool_calls"]]
    assert [(w["start"], w["end"], w["next_after"]) for w in windows] == [(0, 10, 9), (10, 20, 19), (20, 25, None)]
    assert windows[0]["total"] == 25 and windows[0]["next"].endswith(f"{detail(conversation)}?after=9&limit=10")


def test_a_window_names_the_parent_of_its_first_message(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=12)
    parent = Message.objects.get(conversation=conversation, depth=4, on_active_path=True)

    body = reader.get(f"{detail(conversation)}?after=4&limit=3").json()

    assert [m["key"] for m in body["messages"]][:1] == list(
        Message.objects.filter(conversation=conversation, depth=5, on_active_path=True).values_list("key", flat=True)
    )
    assert body["messages"][0]["parent_key"] == parent.key


def test_after_alone_reads_a_window_of_the_default_size(source: Any, reader: APIClient) -> None:
    conversation = make_conversation(source, n_messages=WINDOW_SIZE + 30, with_tools=False)

    body = reader.get(f"{detail(conversation)}?after=9").json()

    assert len(body["messages"]) == WINDOW_SIZE and body["window"]["start"] == 10
    assert body["window"]["next_after"] == 9 + WINDOW_SIZE


def test_a_window_lists_only_the_feedback_on_its_messages_and_on_the_conversation(
    source: Any, reader: APIClient, reviewer: Any
) -> None:
    conversation = make_conversation(source, n_messages=12)
    inside, outside = (Message.objects.get(conversation=conversation, depth=d, on_active_path=True) for d in (1, 8))
    for message in (inside, outside, None):
        feedback_submit(author=reviewer, conversation=conversation, message=message, score=1)

    body = reader.get(f"{detail(conversation)}?limit=4").json()

    assert sorted(str(entry["message"]) for entry in body["feedback"]) == sorted([inside.key, "None"])


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("after=-1", "/after"),
        ("after=abc", "/after"),
        (f"after={2**63}", "/after"),
        ("limit=0", "/limit"),
        (f"limit={WINDOW_LIMIT_MAX + 1}", "/limit"),
        ("limit=1e3", "/limit"),
        ("branch=all&limit=5", "/branch"),
    ],
)
def test_a_bad_window_is_a_400_naming_the_parameter(source: Any, reader: APIClient, query: str, path: str) -> None:
    conversation = make_conversation(source, n_messages=3)

    response = reader.get(f"{detail(conversation)}?{query}")

    assert response.status_code == 400
    assert [error["path"] for error in response.json()["errors"]] == [path]


@pytest.mark.parametrize("n_messages", [8, 400])
def test_a_window_takes_the_same_queries_whatever_the_thread_size(
    source: Any, reader: APIClient, reviewer: Any, django_assert_num_queries: Any, n_messages: int
) -> None:
    conversation = make_conversation(source, n_messages=n_messages)
    feedback_submit(author=reviewer, conversation=conversation, score=1)
    reader.get(detail(conversation))  # the view recorded: the window below is read alone

    # session, user, groups, conversation; the path's length, the window's messages, the key of its first message's
    # parent; tool calls, artifacts, feedback, their labels
    with django_assert_num_queries(11):
        response = reader.get(f"{detail(conversation)}?after=2&limit=5")

    assert response.status_code == 200 and len(response.json()["messages"]) == 5
