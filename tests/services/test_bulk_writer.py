"""The set-based bulk path (chats.services.bulk_writer) stores exactly what the ordinary path stores, for the same input."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model, QuerySet
from django.test.utils import CaptureQueriesContext

from chats.demo.generator import generate
from chats.models import (
    Conversation,
    Feedback,
    IngestionReceipt,
    InjectedArtifact,
    Message,
    Source,
    ToolCall,
)
from chats.services import bulk_writer
from chats.services.ingestion import IngestResult, conversation_ingest

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

# Fields that say when or under which id a row was written, not what was written.
INGESTION_FIELDS = {"id", "uuid", "created_at", "updated_at", "source", "conversation"}


def _documents(count: int = 40, seed: int = 11) -> list[Any]:
    documents = [document for _, document in generate(count, seed=seed, turns=(1, 3), result_size=(200, 600))]
    # A repeat within the batch, a document that is rejected, and one whose active leaf is a branch.
    documents.append(copy.deepcopy(documents[3]))
    documents.append({"chat_id": "no-messages", "main_messages": []})
    return documents


def _values(model: type[Model], source: Source, **filters: Any) -> list[dict[str, Any]]:
    names = [f.attname for f in model._meta.concrete_fields if f.name not in INGESTION_FIELDS]
    key = "source" if model in (Conversation, IngestionReceipt) else "conversation__source"
    return list(model._default_manager.filter(**{key: source}, **filters).values("id", *names))


def _rows(queryset: QuerySet[Any]) -> list[dict[str, Any]]:
    """The rows as plain dicts, to be rewritten in place (ids replaced by what they identify)."""
    return list(queryset.values())


def snapshot(source: Source) -> dict[str, Any]:
    """Every stored row of a source, keyed by what identifies it in the input rather than by database ids."""
    conversations = {row.pop("id"): row for row in _values(Conversation, source)}
    ext = {pk: row["external_id"] for pk, row in conversations.items()}
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, title_vector::text FROM chats_conversation WHERE source_id = %s", [source.pk])
        for pk, vector in cursor.fetchall():
            conversations[pk]["title_vector"] = vector
    for row in conversations.values():
        if row["started_at"] is None:
            row.pop("last_activity_at")  # the time of ingestion when the input has none
        else:
            row["last_activity_at"] = row["last_activity_at"].isoformat()

    message_key: dict[int, tuple[str, str]] = {}
    messages: dict[tuple[str, str], dict[str, Any]] = {}
    raw_messages = _rows(Message.objects.filter(conversation__source=source))
    for row in raw_messages:
        message_key[row["id"]] = (ext[row["conversation_id"]], row["key"])
    with connection.cursor() as cursor:  # each message's vector, built by the statement that wrote it
        cursor.execute(
            "SELECT m.id, m.search_vector::text FROM chats_message m JOIN chats_conversation c "
            "ON c.id = m.conversation_id WHERE c.source_id = %s",
            [source.pk],
        )
        vectors = dict(cursor.fetchall())
    for row in raw_messages:
        row["search_vector"] = vectors[row["id"]]
        row["parent_id"] = message_key[row["parent_id"]] if row["parent_id"] else None
        key = message_key[row.pop("id")]
        for name in ("conversation_id", "created_at"):
            row.pop(name)
        messages[key] = row

    call_key: dict[int, tuple[str, str]] = {}
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _rows(ToolCall.objects.filter(conversation__source=source)):
        key = (ext[row.pop("conversation_id")], row["call_id"])
        call_key[row.pop("id")] = key
        row["message_id"] = message_key[row["message_id"]]
        row["result_message_id"] = message_key.get(row["result_message_id"])
        calls[key] = row

    artifacts: Counter[str] = Counter()
    for row in _rows(InjectedArtifact.objects.filter(conversation__source=source)):
        row.pop("id")
        row["conversation_id"] = ext[row["conversation_id"]]
        row["message_id"] = message_key[row["message_id"]]
        row["tool_call_id"] = call_key[row["tool_call_id"]]
        artifacts[repr(sorted(row.items()))] += 1

    feedback: Counter[str] = Counter()
    for row in _rows(Feedback.objects.filter(conversation__source=source)):
        for name in ("id", "uuid", "created_at", "updated_at"):
            row.pop(name)
        row["conversation_id"] = ext[row["conversation_id"]]
        row["message_id"] = message_key.get(row["message_id"])
        feedback[repr(sorted(row.items()))] += 1

    receipts: Counter[str] = Counter()
    for row in _rows(IngestionReceipt.objects.filter(source=source)):
        for name in ("id", "uuid", "created_at", "source_id"):
            row.pop(name)
        row["conversation_id"] = ext.get(row["conversation_id"])
        receipts[repr(sorted(row.items()))] += 1

    return {
        "conversations": {row["external_id"]: row for row in conversations.values()},
        "messages": messages,
        "tool_calls": calls,
        "artifacts": artifacts,
        "feedback": feedback,
        "receipts": receipts,
    }


def assert_same_rows(ordinary: dict[str, Any], fast: dict[str, Any]) -> None:
    for table in ordinary:
        assert ordinary[table].keys() == fast[table].keys(), table
        for key in ordinary[table]:
            assert ordinary[table][key] == fast[table][key], (table, key)


def _outcomes(results: list[IngestResult]) -> list[tuple[Any, ...]]:
    return [(r.outcome, r.external_id, r.format, r.warnings, r.errors, r.messages_added) for r in results]


def test_the_fast_path_stores_exactly_what_the_ordinary_path_stores(caplog):
    ordinary_source = Source.objects.create(name="ordinary")
    fast_source = Source.objects.create(name="fast")
    documents = _documents()

    ordinary = [conversation_ingest(source=ordinary_source, document=d) for d in documents]
    fast = bulk_writer.conversations_ingest_bulk(source=fast_source, documents=copy.deepcopy(documents))

    assert not [r for r in caplog.records if r.name == "chats.services.bulk_writer"]  # no fallback
    assert _outcomes(fast) == _outcomes(ordinary)
    assert Counter(r.outcome for r in fast) == {"created": len(documents) - 2, "unchanged": 1, "rejected": 1}
    ordinary_rows, fast_rows = snapshot(ordinary_source), snapshot(fast_source)
    assert len(fast_rows["messages"]) > 300 and fast_rows["tool_calls"] and fast_rows["artifacts"]
    assert any(row["branch_count"] for row in fast_rows["conversations"].values())
    assert any(row["feedback_count"] for row in fast_rows["conversations"].values())
    assert_same_rows(ordinary_rows, fast_rows)
    # The returned objects are the stored ones.
    assert {str(r.receipt.uuid) for r in fast} == {
        str(u) for u in IngestionReceipt.objects.filter(source=fast_source).values_list("uuid", flat=True)
    }
    assert all(r.conversation.uuid for r in fast if r.conversation is not None)


def test_replaying_a_batch_says_unchanged_and_changes_nothing_but_receipts():
    ordinary_source = Source.objects.create(name="ordinary")
    fast_source = Source.objects.create(name="fast")
    documents = _documents(count=24, seed=5)
    for d in documents:
        conversation_ingest(source=ordinary_source, document=d)
    bulk_writer.conversations_ingest_bulk(source=fast_source, documents=documents)
    before = snapshot(fast_source)

    ordinary = [conversation_ingest(source=ordinary_source, document=d) for d in documents]
    third_source = Source.objects.create(name="third")
    bulk_writer.conversations_ingest_bulk(source=third_source, documents=documents)
    with CaptureQueriesContext(connection) as half:
        bulk_writer.conversations_ingest_bulk(source=third_source, documents=documents[:12] + documents[-2:])
    with CaptureQueriesContext(connection) as queries:
        fast = bulk_writer.conversations_ingest_bulk(source=fast_source, documents=documents)

    # Recognised set-based (a handful of reads, one COPY and one INSERT of the payloads), not one document at a
    # time: twice the documents (the repeated one and the rejected one, on their own, in both) take the same queries.
    assert len(queries) == len(half) < 28
    assert _outcomes(fast) == _outcomes(ordinary)
    assert {r.outcome for r in fast} == {"unchanged", "rejected"}
    after = snapshot(fast_source)
    for table in ("conversations", "messages", "tool_calls", "artifacts", "feedback"):
        assert after[table] == before[table], table
    assert after["receipts"].total() == 2 * before["receipts"].total()
    assert_same_rows(snapshot(ordinary_source), after)


def test_longer_histories_and_edits_in_a_batch_update_as_the_ordinary_path_does():
    ordinary_source = Source.objects.create(name="ordinary")
    fast_source = Source.objects.create(name="fast")
    documents = _documents(count=16, seed=3)
    for d in documents:
        conversation_ingest(source=ordinary_source, document=d)
    bulk_writer.conversations_ingest_bulk(source=fast_source, documents=documents)
    grown = copy.deepcopy(documents)
    for document in grown:
        if isinstance(document, dict) and "main_messages" in document and document["main_messages"]:
            document["main_messages"].append({"role": "user", "content": "And one more question?"})
            document.setdefault("human_feedback", [])
    grown[0]["title"] = "A new title"
    grown += [d for _, d in generate(4, seed=99)]  # new ones in the same batch

    ordinary = [conversation_ingest(source=ordinary_source, document=d) for d in grown]
    fast = bulk_writer.conversations_ingest_bulk(source=fast_source, documents=grown)

    assert _outcomes(fast) == _outcomes(ordinary)
    assert {"updated", "created", "unchanged"} <= {r.outcome for r in fast}
    assert_same_rows(snapshot(ordinary_source), snapshot(fast_source))


def test_when_the_batch_fails_every_document_is_stored_one_by_one(monkeypatch):
    ordinary_source = Source.objects.create(name="ordinary")
    fast_source = Source.objects.create(name="fast")
    documents = _documents(count=10, seed=8)

    def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(bulk_writer, "_copy_receipts", fail)
    ordinary = [conversation_ingest(source=ordinary_source, document=d) for d in documents]
    fast = bulk_writer.conversations_ingest_bulk(source=fast_source, documents=documents)

    assert _outcomes(fast) == _outcomes(ordinary)
    assert_same_rows(snapshot(ordinary_source), snapshot(fast_source))


def test_values_the_fast_json_encoder_refuses_are_stored_as_the_ordinary_path_stores_them(caplog):
    ordinary_source = Source.objects.create(name="ordinary")
    fast_source = Source.objects.create(name="fast")
    # An integer beyond 64 bits (orjson refuses it), a float, text outside the BMP, escapes and a control character.
    odd = {"big": 2**70, "negative": -(2**65), "ratio": 0.1, "tiny": 1e-300, "text": 'é😀\u2028"\\\t\x01'}
    documents = [
        {
            "chat_id": "odd-values",
            "model": "m",
            "messages": [
                {"role": "user", "content": "odd values", "metadata": odd},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                    "x_extra": [odd],
                },
                {"role": "tool", "tool_call_id": "c1", "content": '{"n": 18446744073709551617}'},
            ],
        }
    ]
    ordinary = [conversation_ingest(source=ordinary_source, document=d) for d in copy.deepcopy(documents)]
    fast = bulk_writer.conversations_ingest_bulk(source=fast_source, documents=documents)

    assert not [r for r in caplog.records if r.name == "chats.services.bulk_writer"]  # no fallback
    assert _outcomes(fast) == _outcomes(ordinary) and fast[0].outcome == "created"
    assert_same_rows(snapshot(ordinary_source), snapshot(fast_source))
    stored = Message.objects.get(conversation__source=fast_source, position=0)
    assert isinstance(stored.raw, dict) and stored.raw["metadata"] == odd


def test_the_collector_runs_again_after_a_batch_whether_it_succeeds_or_fails(monkeypatch):
    import gc

    source = Source.objects.create(name="fast")
    seen: list[bool] = []
    original = bulk_writer._write_batch

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(bulk_writer, "_write_batch", watched)
    bulk_writer.conversations_ingest_bulk(source=source, documents=_documents(count=5))
    assert seen == [False] and gc.isenabled()

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(bulk_writer, "_ingest", fail)
    with pytest.raises(RuntimeError):
        bulk_writer.conversations_ingest_bulk(source=source, documents=_documents(count=5))
    assert gc.isenabled()
