"""The ingest service: atomic, idempotent, branching, and safe under concurrency."""

from __future__ import annotations

import copy
import hashlib
import threading
from typing import Any

import pytest
from django.db import connection, connections

from chats.export.linear import export_openai
from chats.formats.canonical import canonical_json
from chats.models import Conversation, IngestionReceipt, InjectedArtifact, Message, Source, ToolCall
from chats.selectors.exports import conversation_to_canonical
from chats.services import plan_writer
from chats.services.ingestion import IngestResult, conversation_ingest

# engines: primary keys are reserved per engine; CI runs this file again on SQLite.
pytestmark = pytest.mark.engines

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Why are there nonspecific PCR bands?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_abc123",
                "type": "function",
                "function": {
                    "name": "airalogy_search",
                    "arguments": '{"keywords":["PCR","nonspecific bands"]}',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_abc123", "content": '{"search_result":"Possible primer dimers."}'},
    {"role": "assistant", "content": "Possible causes include contamination or primer dimer formation."},
]


def chat_document(
    messages: list[dict[str, Any]], chat_id: str = "airalogy.id.chat.5b0f1b8e-0c1c-4e57-9c43-6d1f0f6b2a10"
) -> dict[str, Any]:
    return {
        "chat_id": chat_id,
        "user_id": "u-1",
        "model": {"name": "qwen3.5-flash"},
        "main_messages": messages,
    }


def ingest(
    source: Source, document: object, *, format: str | None = None, external_id: str | None = None
) -> IngestResult:
    return conversation_ingest(source=source, document=document, format=format, external_id=external_id)


def active_texts(conversation: Conversation) -> list[str]:
    return list(conversation.messages.filter(on_active_path=True).order_by("depth").values_list("text", flat=True))


@pytest.mark.django_db
def test_a_new_conversation_is_created_with_its_messages_tool_calls_and_receipt(source):
    result = ingest(source, chat_document(HISTORY))

    assert result.outcome == "created"
    conversation = result.conversation
    assert conversation is not None
    assert conversation.external_id == "airalogy.id.chat.5b0f1b8e-0c1c-4e57-9c43-6d1f0f6b2a10"
    assert conversation.message_count == 4 and conversation.tool_call_count == 1
    call = ToolCall.objects.get(conversation=conversation)
    assert call.name == "airalogy_search" and call.parsed_arguments == {"keywords": ["PCR", "nonspecific bands"]}
    assert call.result_message is not None and call.result_message.role == "tool"
    # Stored once: its canonical fields give it back exactly, so no second copy of it is kept.
    assert conversation.messages.get(position=1).raw is None
    assert export_openai(conversation_to_canonical(conversation)).document[1] == HISTORY[1]
    receipt = IngestionReceipt.objects.select_related("payload").get(uuid=result.receipt.uuid)
    assert receipt.outcome == "created" and receipt.payload is not None
    assert receipt.payload.shown.document == chat_document(HISTORY)
    assert receipt.payload_sha256 == hashlib.sha256(canonical_json(chat_document(HISTORY)).encode()).hexdigest()


@pytest.mark.django_db
def test_sending_the_same_document_twice_says_unchanged_and_changes_nothing(source):
    ingest(source, chat_document(HISTORY))
    before = list(Message.objects.values_list("id", "key", "on_active_path"))

    result = ingest(source, chat_document(HISTORY))

    assert result.outcome == "unchanged"
    assert list(Message.objects.values_list("id", "key", "on_active_path")) == before
    assert IngestionReceipt.objects.count() == 2


@pytest.mark.django_db
def test_resending_a_longer_history_appends_messages(source):
    ingest(source, chat_document(HISTORY))
    longer = [
        *HISTORY,
        {"role": "user", "content": "And how do I avoid them?"},
        {"role": "assistant", "content": "Use a touchdown PCR."},
    ]

    result = ingest(source, chat_document(longer))

    assert result.outcome == "updated" and result.messages_added == 2
    conversation = Conversation.objects.get()
    assert conversation.message_count == 6 and conversation.branch_count == 0
    assert active_texts(conversation)[-1] == "Use a touchdown PCR."


@pytest.mark.django_db
def test_an_edited_history_branches_from_the_last_common_message_and_becomes_active(source):
    ingest(source, chat_document(HISTORY))
    edited = copy.deepcopy(HISTORY)
    edited[3]["content"] = "A regenerated answer: lower the primer concentration."

    result = ingest(source, chat_document(edited))

    conversation = result.conversation
    assert result.outcome == "updated"
    assert conversation is not None
    assert conversation.message_count == 5 and conversation.branch_count == 1
    new, old = Message.objects.filter(conversation=conversation, depth=3).order_by("-position")
    assert new.parent_id == old.parent_id  # siblings under the tool result
    assert new.on_active_path and not old.on_active_path
    assert active_texts(conversation)[-1].startswith("A regenerated answer")
    # Nothing stored was overwritten.
    assert old.text == HISTORY[3]["content"]


@pytest.mark.django_db
def test_a_document_without_an_id_gets_a_stable_generated_one(source):
    first = ingest(source, HISTORY, format="openai")
    second = ingest(source, HISTORY, format="openai")

    assert first.conversation is not None
    assert first.external_id.startswith("gen-") and first.conversation.external_id_generated
    assert second.outcome == "unchanged" and second.external_id == first.external_id


@pytest.mark.django_db
def test_the_client_can_name_a_conversation_that_has_no_id(source):
    result = ingest(source, HISTORY, format="openai", external_id="ticket-42")
    longer = ingest(source, [*HISTORY, {"role": "user", "content": "Thanks"}], external_id="ticket-42")

    assert result.external_id == "ticket-42" and longer.outcome == "updated"


@pytest.mark.django_db
def test_the_same_external_id_in_two_sources_is_two_conversations(source, other_source):
    ingest(source, chat_document(HISTORY))
    ingest(other_source, chat_document(HISTORY))

    assert Conversation.objects.count() == 2


@pytest.mark.django_db
def test_a_late_tool_result_answers_the_call_stored_unanswered(source):
    ingest(source, chat_document(HISTORY[:2]))
    assert ToolCall.objects.get().result_message is None

    ingest(source, chat_document(HISTORY))

    result_message = ToolCall.objects.get().result_message
    assert result_message is not None and result_message.role == "tool"


@pytest.mark.django_db
def test_orphan_tool_results_are_kept_and_flagged(source):
    messages = [*HISTORY, {"role": "tool", "tool_call_id": "call_nobody", "content": "stray"}]

    result = ingest(source, chat_document(messages))

    orphan = Message.objects.get(tool_call_id="call_nobody")
    assert orphan.is_orphan_result
    assert any("call_nobody" in w["message"] for w in result.warnings)


@pytest.mark.django_db
def test_injected_artifacts_are_stored_with_their_call(source):
    protocol_id = "airalogy.id.lab.example.project.demo.protocol.pcr_setup.v.0.0.1"
    messages = [
        {"role": "user", "content": "Explain this protocol."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_p",
                    "type": "function",
                    "function": {
                        "name": "inject_airalogy_protocols",
                        "arguments": f'{{"airalogy_protocol_ids":["{protocol_id}"]}}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_p",
            "content": (f'{{"airalogy_protocols":[{{"airalogy_protocol_id":"{protocol_id}","markdown":"# PCR"}}]}}'),
        },
        {"role": "assistant", "content": "This protocol defines a PCR setup."},
    ]
    document = {
        "context": {"inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [protocol_id]}},
        "main_messages": messages,
    }

    result = ingest(source, document)

    artifact = InjectedArtifact.objects.get()
    assert (artifact.kind, artifact.artifact_id, artifact.requested, artifact.resolved) == (
        "protocol",
        protocol_id,
        True,
        True,
    )
    assert artifact.payload is not None and result.conversation is not None
    assert artifact.tool_call.call_id == "call_p" and artifact.payload["markdown"] == "# PCR"
    assert result.conversation.injection_context is not None
    assert result.conversation.injection_context["inject_airalogy_protocols"]["enabled"] is True


@pytest.mark.django_db
def test_a_rejected_document_stores_nothing_but_its_receipt(source):
    result = ingest(source, {"chat_id": "x", "main_messages": [{"content": "no role"}]})

    assert result.outcome == "rejected"
    assert result.errors[0]["path"].startswith("/main_messages/0")
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0
    assert IngestionReceipt.objects.get().outcome == "rejected"


@pytest.mark.django_db
def test_a_failure_in_the_middle_of_a_conversation_leaves_nothing_stored(source, monkeypatch):
    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(plan_writer, "plan_apply_changes", fail)  # after the rows are inserted
    result = ingest(source, chat_document(HISTORY))

    # The document alone is rejected, with the reason; its receipt keeps the bytes.
    assert result.outcome == "rejected"
    assert result.errors == [
        {"path": "", "message": "storing the document failed (RuntimeError: disk full); nothing of it was stored"}
    ]
    assert IngestionReceipt.objects.get().outcome == "rejected"
    assert Conversation.objects.count() == 0
    assert Message.objects.count() == 0 and ToolCall.objects.count() == 0


@pytest.mark.django_db
def test_a_constraint_the_database_enforces_rejects_the_document_as_a_conflict(source, monkeypatch):
    def conflict(plan: Any, conversation: Conversation, *args: object) -> None:
        # A second row for the same conversation: PostgreSQL's unique constraint refuses it (an IntegrityError).
        Conversation.objects.create(
            source=source, external_id="other", external_id_digest=conversation.external_id_digest
        )

    monkeypatch.setattr(plan_writer, "plan_apply_changes", conflict)
    result = ingest(source, chat_document(HISTORY))

    assert result.outcome == "rejected"
    assert result.errors == [{"path": "", "message": "the document conflicts with what is stored; nothing was stored"}]
    assert Conversation.objects.count() == 0 and IngestionReceipt.objects.get().outcome == "rejected"


@pytest.mark.django_db
def test_masterbrain_human_feedback_is_imported_once(source):
    document = chat_document(HISTORY) | {
        "human_feedback": [
            {"score": 0, "additional": ""},
            {"score": 0, "additional": ""},
            {"score": 0, "additional": ""},
            {"score": -1, "additional": "too vague"},
        ]
    }

    ingest(source, document)
    again = ingest(source, document)

    conversation = Conversation.objects.get()
    feedback = conversation.feedback.get()
    assert (feedback.origin, feedback.score, feedback.comment) == ("masterbrain", -1, "too vague")
    assert feedback.message is not None and feedback.message.position == 3
    assert again.outcome == "unchanged" and conversation.score_down == 1


@pytest.mark.django_db
def test_too_many_messages_is_rejected_as_over_the_limit(source, settings):
    settings.MASTERBRAIN_MAX_MESSAGES = 3

    result = ingest(source, chat_document(HISTORY))

    assert result.outcome == "rejected" and result.over_limit
    assert Conversation.objects.count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_clients_posting_the_same_new_conversation_at_once_make_one_conversation(source):
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def post() -> None:
        try:
            barrier.wait()
            outcomes.append(ingest(source, chat_document(HISTORY)).outcome)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["created", "unchanged", "unchanged", "unchanged"]
    assert Conversation.objects.count() == 1
    assert Message.objects.count() == 4 and ToolCall.objects.count() == 1
    assert connection.vendor == "postgresql"


def vector_matches(words: str) -> int:
    """Conversations with a message whose own vector matches (the GIN-indexed column the search reads)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT conversation_id) FROM chats_message "
            "WHERE search_vector @@ plainto_tsquery('english', %s)",
            [words],
        )
        return int(cursor.fetchone()[0])


def message_versions() -> dict[int, int]:
    """Each message row's version (xmin): a row written again gets a new one."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, xmin::text::bigint FROM chats_message")
        return dict(cursor.fetchall())


@pytest.mark.postgres
@pytest.mark.django_db
def test_what_an_ingestion_stores_is_searchable_by_the_statement_that_stores_it(source):
    ingest(source, chat_document(HISTORY))
    assert vector_matches("primer dimers") == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM chats_message WHERE search_vector IS NULL")
        assert cursor.fetchone() == (0,)


@pytest.mark.postgres
@pytest.mark.django_db
def test_appending_indexes_only_the_new_messages_and_a_replay_nothing(source):
    ingest(source, chat_document(HISTORY))
    before = message_versions()

    ingest(source, chat_document(HISTORY))
    assert message_versions() == before  # a replay writes no message again
    ingest(source, chat_document([*HISTORY, {"role": "user", "content": "What about photobleaching?"}]))

    after = message_versions()
    assert {pk: after[pk] for pk in before} == before  # the stored messages' vectors are not built again
    assert len(after) == len(before) + 1
    assert vector_matches("photobleaching") == 1


def graph(count: int) -> dict[str, Any]:
    nodes = [
        {
            "node_id": f"n{n}",
            "parent_id": f"n{n - 1}" if n > 1 else None,
            "timestamp": 1625216400 + n,
            "message": {
                "id": f"m{n}",
                "author": {"role": "user" if n % 2 else "assistant", "metadata": {}},
                "content": {"content_type": "text", "parts": [f"turn {n}"]},
            },
        }
        for n in range(1, count + 1)
    ]
    return {"conversation_id": "graph-1", "nodes": nodes}


@pytest.mark.django_db
def test_an_older_snapshot_sent_late_leaves_the_thread_where_it_is(source):
    ingest(source, graph(6))

    late = ingest(source, graph(2))

    conversation = Conversation.objects.get()
    assert late.outcome == "unchanged"
    assert conversation.active_leaf_key == "n6"
    assert active_texts(conversation) == [f"turn {n}" for n in range(1, 7)]
