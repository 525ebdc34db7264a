"""The thread page's "Given to the model" panel (issue 14 §2), read by chats/selectors/model_inputs.py: the Done-when
document of issue 14 (seed 001 grown: one permitted protocol injection, a record injected while records are disabled,
an unlisted discussion, a context id never used), ingested through the API, with its model settings, times, scenario,
tools offered and prompts.
"""

from __future__ import annotations

import copy
import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from chats.models import Conversation, Message
from chats.selectors.threads import FIRST_WINDOW
from tests.factories.documents import load_fixture
from tests.factories.policy import (
    DISABLED_RECORD,
    LISTED_DISCUSSION,
    NEVER_USED,
    PERMITTED,
    SYSTEM_PROMPT,
    UNLISTED_DISCUSSION,
    document,
    given_document,
    post,
)

pytestmark = pytest.mark.django_db


def ingest(client: APIClient, body: dict[str, Any]) -> Conversation:
    return Conversation.objects.get(uuid=post(client, "/api/v1/ingest/", body)["conversation"])


def page(client: Client, reviewer: User, conversation: Conversation) -> str:
    client.force_login(reviewer)
    response = client.get(conversation.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def table_rows(body: str, table_class: str) -> list[str]:
    """The text of each body row of the panel's table of that class."""
    start = body.index(f'<table class="record-data {table_class}">')
    table = body[start : body.index("</table>", start)]
    tbody = table[table.index("<tbody>") :]
    return [text_of(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", tbody, flags=re.DOTALL)]


def row_of(rows: list[str], artifact_id: str) -> str:
    [row] = [row for row in rows if artifact_id in row.split()]
    return row


def panel(body: str) -> str:
    return body[body.index('<section id="given"') : body.index("</section>", body.index('<section id="given"'))]


def markers(body: str) -> dict[str, str]:
    """Each injection marker in the thread: its artifact id -> its text."""
    found = {}
    for block in body.split('<div class="injection ')[1:]:
        head = block[: block.index("</p>")]
        artifact_id = text_of(head[head.index('<code class="artifact-id">') : head.index("</code>")])
        found[artifact_id] = text_of(head)
    return found


def test_each_listed_id_shows_its_state_and_each_injection_its_verdict_in_words(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    body = page(client, reviewer, ingest(ingest_client, given_document()))

    listed = table_rows(body, "context-ids")
    assert len(listed) == 4
    assert row_of(listed, PERMITTED) == f"{PERMITTED} ⚠ Malformed protocol id protocol Injected and resolved"
    assert row_of(listed, NEVER_USED) == f"{NEVER_USED} protocol Unused"
    assert row_of(listed, DISABLED_RECORD) == f"{DISABLED_RECORD} record Injected and resolved"
    assert row_of(listed, LISTED_DISCUSSION) == f"{LISTED_DISCUSSION} discussion Unused"
    injected = table_rows(body, "injections-judged")
    assert len(injected) == 3
    assert row_of(injected, PERMITTED).endswith("protocol Permitted see the call")
    assert row_of(injected, DISABLED_RECORD).endswith("record ⚠ Policy violation: kind not enabled see the call")
    assert row_of(injected, UNLISTED_DISCUSSION).endswith("discussion ⚠ Policy violation: not listed see the call")


def test_each_injection_marker_in_the_thread_carries_its_verdict(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    body = page(client, reviewer, ingest(ingest_client, given_document()))

    shown = markers(body)
    assert set(shown) == {PERMITTED, DISABLED_RECORD, UNLISTED_DISCUSSION}
    assert shown[PERMITTED].endswith("Permitted by the context")
    assert shown[DISABLED_RECORD].endswith("Policy violation: kind not enabled")
    assert shown[UNLISTED_DISCUSSION].endswith("Policy violation: not listed")
    assert body.count('<div class="injection kind-record violation" role="group"') == 1
    assert body.count('<div class="injection kind-discussion violation" role="group"') == 1
    assert body.count('<div class="injection kind-protocol" role="group"') == 1


def test_the_panel_shows_the_model_settings_times_scenario_tools_and_prompts(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    body = panel(page(client, reviewer, ingest(ingest_client, given_document())))
    overview = text_of(body[body.index('<dl class="given-overview">') : body.index("</dl>")])

    assert "Model qwen3.5-flash" in overview
    # jsonb keeps an object's keys in its own order: each setting is looked for on its own.
    assert "enable_thinking : true" in overview and "temperature : 0.2" in overview
    assert "name :" not in overview  # the model's name is the model, not a setting
    assert "Started 2025-03-01 10:00:00 Ended 2025-03-01 10:05:30 (5 min 30 s after the start)" in overview
    assert "Prompts 1 system, developer or scenario message " in overview
    assert re.search(r"Scenario 2 keys: (workflow , lab|lab , workflow) Tools", overview)
    assert "Tools offered 2 (from the request's tools list)" in overview
    assert "Policy violation: 2 of 3 injections not permitted" in overview
    assert "4 ids listed: 2 injected and resolved, 2 unused" in overview
    assert table_rows(body, "tools-offered") == [
        "airalogy_search Search protocols and records by keyword. no",
        "inject_airalogy_protocols Inject protocols. yes",
    ]
    # The tools called that the list does not offer are named.
    assert text_of(body).count("Called but not offered: inject_airalogy_discussions , inject_airalogy_records") == 1
    assert SYSTEM_PROMPT in text_of(body)
    assert "<td>record_qa</td>" in body  # the scenario's workflow, in its table
    assert "x_client" in body and "lab-ui 2.3" in body  # a top-level key no format maps
    # Each long part is folded, the overview is not.
    assert '<details class="given-panel" open>' in body
    assert body.count('<details class="given-part">') + body.count('<details class="given-part" id=') == 6
    assert '<details class="given-part" open' not in body


def test_the_header_says_policy_violation_only_for_a_violation(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    violation = ingest(ingest_client, given_document())
    clean = ingest(
        ingest_client,
        given_document(
            chat_id="airalogy.id.chat.clean",
            context={
                **document()["context"],
                "inject_airalogy_records": {"enabled": True, "airalogy_record_ids": [DISABLED_RECORD]},
                "inject_airalogy_discussions": {"enabled": True, "airalogy_discussion_ids": [UNLISTED_DISCUSSION]},
            },
        ),
    )
    without_context = ingest(ingest_client, {"chat_id": "no-context", "messages": [{"role": "user", "content": "Hi"}]})

    def head(conversation: Conversation) -> str:
        body = page(client, reviewer, conversation)
        start = body.index('<header class="thread-head"')
        return text_of(body[start : body.index("</header>", start)])

    assert "Policy violation (an injection the context did not permit)" in head(violation)
    assert "Policy violation" not in head(clean) and "Injection policy clean" in head(clean)
    assert "Policy violation" not in head(without_context) and "Injection policy no context" in head(without_context)
    assert "Clean: 3 injections, all permitted" in text_of(panel(page(client, reviewer, clean)))
    shown = text_of(panel(page(client, reviewer, without_context)))
    assert "No injection context: nothing stated, nothing judged" in shown
    assert "Injection context" not in shown.replace("No injection context", "")


def test_function_names_are_the_tools_offered_when_the_document_states_them(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    body = given_document(function_names=["airalogy_search", "inject_airalogy_protocols"])
    del body["tools"]

    shown = panel(page(client, reviewer, ingest(ingest_client, body)))

    assert "Tools offered 2 (from the document's function_names)" in text_of(shown)
    assert table_rows(shown, "tools-offered") == ["airalogy_search no", "inject_airalogy_protocols yes"]


def test_without_a_list_the_tools_called_are_shown_and_said_to_be_only_that(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    shown = panel(page(client, reviewer, ingest(ingest_client, document())))

    assert "Tools offered not stated; 3 called (from the tools actually called" in text_of(shown)
    assert table_rows(shown, "tools-offered") == [
        "inject_airalogy_discussions yes",
        "inject_airalogy_protocols yes",
        "inject_airalogy_records yes",
    ]
    assert "Called but not offered" not in shown


def test_author_metadata_and_unknown_keys_show_folded_with_their_message(
    ingest_client: APIClient, client: Client, reviewer: User
) -> None:
    graph = copy.deepcopy(load_fixture("chat_graph/seed_linear.json"))
    graph["nodes"][1]["message"]["author"]["metadata"] = {"model_slug": "gpt-4o"}
    body = page(client, reviewer, ingest(ingest_client, graph))
    plain = given_document()
    plain["main_messages"][0]["x_trace"] = {"span": "a1b2"}
    with_extra = page(client, reviewer, ingest(ingest_client, plain))

    assert body.count("<summary>More: author metadata</summary>") == 1
    assert "&#34;model_slug&#34;: &#34;gpt-4o&#34;" in body
    assert with_extra.count("<summary>More: unknown keys</summary>") == 1
    assert "&#34;span&#34;: &#34;a1b2&#34;" in with_extra


def test_hostile_text_in_the_panel_is_escaped(ingest_client: APIClient, client: Client, reviewer: User) -> None:
    script = '<script>alert("given")</script><img src=x onerror=alert(1)>'
    body = given_document(
        model={"name": script, script: script},
        scenario={script: script},
        tools=[{"type": "function", "function": {"name": script, "description": script}}],
        function_names=[script],
        scenario_messages=[{"role": "system", "content": script, "name": script}],
    )
    body["context"]["inject_airalogy_protocols"]["airalogy_protocol_ids"].append(script)

    shown = panel(page(client, reviewer, ingest(ingest_client, body)))

    assert "<script" not in shown and "<img" not in shown
    assert shown.count("&lt;script&gt;alert(&#34;given&#34;)&lt;/script&gt;") >= 8


def _thread_queries(client: Client, conversation: Conversation, django_assert_num_queries: Any) -> str:
    # session, user, groups, conversation, the active path's length, the window's messages, their siblings, tool
    # calls, artifacts, feedback (with authors; no feedback, so no query for its labels), label taxonomy; the panel:
    # the context's ids, the injections' verdicts, the names of the tools called, the prompts along the whole path;
    # the view recorded (read audit: the first view of each conversation in the window)
    with django_assert_num_queries(16):
        response = client.get(conversation.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def test_the_panel_costs_the_same_queries_for_a_small_and_a_large_thread(
    ingest_client: APIClient, client: Client, reviewer: User, django_assert_num_queries: Any
) -> None:
    small = ingest(ingest_client, given_document())
    large_document = given_document(chat_id="airalogy.id.chat.large")
    for turn in range(150):
        large_document["main_messages"] += [
            {"role": "user", "content": f"Question {turn}", "x_turn": turn},
            {"role": "assistant", "content": f"Answer {turn}"},
        ]
    large = ingest(ingest_client, large_document)
    client.force_login(reviewer)

    small_body = _thread_queries(client, small, django_assert_num_queries)
    large_body = _thread_queries(client, large, django_assert_num_queries)

    assert small_body.count("<summary>More: unknown keys</summary>") == 0
    # The unknown keys are shown with their messages: those of the page's first window.
    in_window = Message.objects.filter(conversation=large, depth__lt=FIRST_WINDOW).exclude(extra={}).count()
    assert large_body.count("<summary>More: unknown keys</summary>") == in_window > 0
    assert large.message_count == small.message_count + 300
