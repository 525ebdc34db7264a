"""Every admin page renders for a superuser, in a number of queries that does not grow with the rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import (
    ApiKey,
    ApiKeyDailyUsage,
    AuditCheckpoint,
    AuditEvent,
    ContextArtifactId,
    Conversation,
    Dataset,
    DatasetItem,
    DatasetLine,
    ExportJob,
    ExportJobPart,
    Feedback,
    FeedbackLabel,
    IngestionReceipt,
    InjectedArtifact,
    Label,
    Lease,
    Message,
    ModelCall,
    Queue,
    QueueItem,
    QueueRule,
    QueueRuleRun,
    ReadEvent,
    ReceiptPayload,
    Resolution,
    Review,
    RubricVersion,
    SavedView,
    Source,
    ToolCall,
    TrendDay,
    TrendMember,
    TrendTally,
)
from chats.services.ingestion import conversation_ingest
from chats.services.review import conversation_set_review_status
from chats.services.sources import api_key_create
from tests.factories import admin as builders

ROLES = ["user", "assistant", "tool", "assistant"]

# Every list: session, user, then the page's rows and whatever its filters need.
CHANGELIST_QUERIES = {
    "source": 5,  # + count, full count, sources
    "apikey": 5,  # + sources (filter), count, keys with source and user (no full count, as every read-only list)
    "conversation": 6,  # + sources (filter), count, conversations with source, distinct model names (filter)
    "message": 4,  # + count, messages with conversation
    "toolcall": 4,  # + count, calls with conversation and message
    "injectedartifact": 4,  # + count, artifacts with conversation
    "contextartifactid": 4,  # + count, listed ids with conversation
    "ingestionreceipt": 5,  # + sources (filter), count, receipts with source and conversation
    "receiptpayload": 4,  # + count, payloads with their compressed size (not their bytes)
    "apikeydailyusage": 4,  # + count, days with their key
    "label": 5,  # + count, full count, labels
    "feedback": 4,  # + count, feedback with conversation, message and author
    "feedbacklabel": 5,  # + labels (filter), count, rows with feedback, label and conversation
    "auditevent": 7,  # + users (filter), count, events with actor, distinct actions (filter), last verification
    "auditcheckpoint": 4,  # + count, checkpoints
    "queue": 4,  # + count, queues with their creator
    "queuerule": 4,  # + count, rules with their queue and creator
    "rubricversion": 4,  # + count, versions with their queue
    "queueitem": 4,  # + count, items with queue and conversation
    "lease": 4,  # + count, leases with item and reviewer
    "review": 4,  # + count, reviews with item and reviewer
    "resolution": 4,  # + count, resolutions with item and lead
    "dataset": 4,  # + count, datasets with their creator
    "datasetitem": 4,  # + count, items with dataset and conversation
    "datasetline": 4,  # + count, frozen lines with their dataset
    "readevent": 4,  # + count, views with their viewer
    "exportjob": 4,  # + count, jobs with who asked and their source
    "exportjobpart": 4,  # + count, chunks with their job (sizes, not bytes)
    "queuerulerun": 4,  # + count, runs with their rule and who asked
    "trendday": 4,  # + count, rows with their source
    "trendtally": 4,  # + count, rows with their source
    "trendmember": 4,  # + count, rows
    "savedview": 4,  # + count, views with their owner
    "modelcall": 6,  # + forms and providers (filters), count, calls with their conversation
}

# Every change page: session, user, the object with its foreign keys, then:
CHANGE_PAGE_QUERIES = {
    "source": 4,  # its API keys
    "apikey": 4,  # the key's last days of usage (today's comes with the key)
    "conversation": 6,  # its messages, their tool calls, their injections
    "message": 3,
    "toolcall": 3,
    "injectedartifact": 3,
    "contextartifactid": 3,
    "ingestionreceipt": 3,  # the payload comes with the receipt
    "receiptpayload": 3,
    "apikeydailyusage": 3,
    "label": 3,
    "feedback": 4,  # its labels
    "feedbacklabel": 3,
    "auditevent": 3,
    "auditcheckpoint": 3,
    "queue": 5,  # its creator, its members
    "queuerule": 5,  # its queue, its creator
    "rubricversion": 4,  # its queue
    "queueitem": 5,  # its queue, its conversation
    "lease": 6,  # its conversation, its item, its reviewer
    "review": 7,  # its conversation, its item, its reviewer, its rubric version
    "resolution": 7,  # its conversation, its item, its lead, its rubric version
    "dataset": 5,  # its creator, its queues
    "datasetitem": 9,  # its dataset, conversation, queue item, queue, rubric version and lead
    "datasetline": 4,  # its dataset
    "readevent": 3,
    "exportjob": 4,  # who asked (a person's job: no source, no key)
    "exportjobpart": 4,  # its job
    "queuerulerun": 5,  # its rule, who asked
    "trendday": 4,  # its source
    "trendtally": 4,  # its source
    "trendmember": 3,
    "savedview": 4,  # its owner
    "modelcall": 4,  # its message (the raw-id label)
}

MODELS: dict[str, Any] = {
    "source": Source,
    "apikey": ApiKey,
    "conversation": Conversation,
    "message": Message,
    "toolcall": ToolCall,
    "injectedartifact": InjectedArtifact,
    "contextartifactid": ContextArtifactId,
    "ingestionreceipt": IngestionReceipt,
    "receiptpayload": ReceiptPayload,
    "apikeydailyusage": ApiKeyDailyUsage,
    "label": Label,
    "feedback": Feedback,
    "feedbacklabel": FeedbackLabel,
    "auditevent": AuditEvent,
    "auditcheckpoint": AuditCheckpoint,
    "queue": Queue,
    "queuerule": QueueRule,
    "rubricversion": RubricVersion,
    "queueitem": QueueItem,
    "lease": Lease,
    "review": Review,
    "resolution": Resolution,
    "dataset": Dataset,
    "datasetitem": DatasetItem,
    "datasetline": DatasetLine,
    "readevent": ReadEvent,
    "exportjob": ExportJob,
    "exportjobpart": ExportJobPart,
    "queuerulerun": QueueRuleRun,
    "savedview": SavedView,
    "modelcall": ModelCall,
    "trendday": TrendDay,
    "trendtally": TrendTally,
    "trendmember": TrendMember,
}


def _warm(client: Client, url: str) -> None:
    # The first request of a process fills caches (content types) that later requests read for free.
    assert client.get(url).status_code == 200


def test_every_chats_model_has_an_admin() -> None:
    from django.apps import apps
    from django.contrib import admin

    assert {model for model in apps.get_app_config("chats").get_models()} <= set(admin.site._registry)
    assert set(MODELS.values()) == set(apps.get_app_config("chats").get_models())


@pytest.mark.parametrize("rows", [1, 30])
def test_every_changelist_renders_in_a_constant_number_of_queries(
    client: Client, admin_user: User, reviewer: User, django_assert_num_queries: Any, rows: int
) -> None:
    builders.world(rows, reviewer)
    client.force_login(admin_user)
    for model_name, queries in CHANGELIST_QUERIES.items():
        url = f"/admin/chats/{model_name}/"
        _warm(client, url)
        with django_assert_num_queries(queries):
            response = client.get(url)
        assert response.status_code == 200, url
        assert len(response.context["cl"].result_list) >= rows, url


@pytest.mark.parametrize("rows", [1, 30])
def test_every_change_page_renders_in_a_constant_number_of_queries(
    client: Client, admin_user: User, reviewer: User, django_assert_num_queries: Any, rows: int
) -> None:
    builders.world(rows, reviewer)
    # The first source gets `rows` keys in all, and the first feedback `rows` labels.
    first_source, first_feedback = Source.objects.order_by("pk")[0], Feedback.objects.order_by("pk")[0]
    for n in range(1, rows):
        api_key_create(source=first_source, name=f"extra-{n}")
        FeedbackLabel.objects.create(
            conversation_id=first_feedback.conversation_id, feedback=first_feedback, label=Label.objects.all()[n]
        )
    client.force_login(admin_user)
    for model_name, queries in CHANGE_PAGE_QUERIES.items():
        obj = MODELS[model_name].objects.order_by("pk").first()
        url = f"/admin/chats/{model_name}/{obj.pk}/change/"
        _warm(client, url)
        with django_assert_num_queries(queries):
            response = client.get(url)
        assert response.status_code == 200, url
    assert first_source.api_keys.count() == rows
    assert first_feedback.labels.count() == rows


@pytest.mark.parametrize("turns", [1, 30])
def test_conversation_page_shows_a_long_thread_in_a_constant_number_of_queries(
    client: Client, admin_user: User, source: Source, django_assert_num_queries: Any, turns: int
) -> None:
    conversation = builders.conversation(source, turns=turns)
    assert conversation.message_count == 4 * turns
    client.force_login(admin_user)
    url = f"/admin/chats/conversation/{conversation.pk}/change/"
    _warm(client, url)
    with django_assert_num_queries(6):  # session, user, conversation+source, messages, tool calls, injections
        response = client.get(url)
    assert response.status_code == 200
    assert response.content.decode().count("<tr><td><a href='/admin/chats/message/") == 4 * turns


def test_conversation_page_lists_messages_in_order_with_their_calls_and_injections(
    client: Client, admin_user: User, source: Source
) -> None:
    conversation = builders.conversation(source, 7)
    client.force_login(admin_user)

    page = client.get(f"/admin/chats/conversation/{conversation.pk}/change/").content.decode()

    table = page[page.index("<th>#</th>") :]
    rows = [table.index(f">{position}</a></td><td>{role}</td>") for position, role in enumerate(ROLES)]
    assert rows == sorted(rows)
    assert "inject_airalogy_protocols <code>call_7_0</code> (answered)" in table
    assert "search <code>broken_7_0</code> (not answered; arguments are not JSON:" in table
    assert f"protocol <code>{builders.PROTOCOL_ID}</code> (well formed; requested and resolved)" in table
    assert "protocol <code>not-an-id</code> (malformed id; requested, not resolved)" in table
    assert "answers call_7_0" in table


def test_a_very_long_thread_is_cut_and_says_so(
    client: Client, admin_user: User, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("chats.admin.conversations.THREAD_TABLE_LIMIT", 6)
    conversation = builders.conversation(source, turns=3)
    client.force_login(admin_user)

    page = client.get(f"/admin/chats/conversation/{conversation.pk}/change/").content.decode()

    assert "The first 6 of 12 messages." in page
    assert page.count("<tr><td><a href='/admin/chats/message/") == 6


def test_conversation_page_escapes_untrusted_message_text(client: Client, admin_user: User, source: Source) -> None:
    conversation = builders.conversation(source, 3)
    client.force_login(admin_user)

    page = client.get(f"/admin/chats/conversation/{conversation.pk}/change/").content.decode()

    assert "<script>alert(3)</script>" not in page
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page
    assert "<b>3</b>" not in page
    assert "Primer dimers &lt;b&gt;3&lt;/b&gt;." in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"chat-0", "chat-1", "chat-2"}),
        ("?has_tool_calls=yes", {"chat-0", "chat-2"}),
        ("?has_tool_calls=no", {"chat-1"}),
        ("?q=chat-2", {"chat-2"}),
        ("?review_status__exact=in_review", {"chat-1"}),
        ("?input_format__exact=openai", {"chat-0", "chat-1", "chat-2"}),
    ],
)
def test_conversation_list_filters_and_search(
    client: Client, admin_user: User, source: Source, query: str, expected: set[str]
) -> None:
    builders.conversation(source, 0)
    plain = conversation_ingest(
        source=source, document=[{"role": "user", "content": "hello"}], format="openai", external_id="chat-1"
    ).conversation
    assert plain is not None
    conversation_set_review_status(actor=admin_user, conversation=plain, status="in_review")
    builders.conversation(source, 2)
    client.force_login(admin_user)

    response = client.get(f"/admin/chats/conversation/{query}")

    assert response.status_code == 200
    shown = {row.external_id for row in response.context["cl"].result_list}
    assert shown == expected


@pytest.mark.parametrize("url", ["/admin/chats/source/add/", "/admin/chats/label/add/", "/admin/"])
def test_pages_for_editable_models_render(client: Client, admin_user: User, url: str) -> None:
    client.force_login(admin_user)
    assert client.get(url).status_code == 200
