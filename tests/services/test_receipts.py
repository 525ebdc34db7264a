"""Receipts keep what came in: the bytes received, stored once per distinct content and compressed, until retention
removes them; the receipts themselves (outcome, hash, size, errors) stay."""

from __future__ import annotations

import hashlib
import random
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chats.formats.canonical import canonical_json
from chats.models import AuditEvent, IngestionReceipt, ReceiptPayload, ShownPayload, Source
from chats.services import receipts as receipt_services
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.ingestion import conversation_ingest
from chats.services.receipts import receipt_payloads_prune

# engines: payloads are stored and pruned per engine; CI runs this file again on SQLite.
pytestmark = [pytest.mark.django_db, pytest.mark.engines]


def chat(chat_id: str, *answers: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": "Why two bands?"}]
    messages += [{"role": "assistant", "content": answer} for answer in answers or ("Primer dimers.",)]
    return {"chat_id": chat_id, "main_messages": messages}


def age(receipts: QuerySet[IngestionReceipt], days: int) -> None:
    receipts.update(created_at=timezone.now() - timedelta(days=days))


def kept_columns() -> dict[int, tuple[Any, ...]]:
    """What a receipt says whatever retention does, by receipt."""
    return {
        row[0]: row[1:]
        for row in IngestionReceipt.objects.values_list(
            "pk", "uuid", "outcome", "payload_sha256", "size_bytes", "external_id", "warnings", "errors", "created_at"
        )
    }


# --------------------------------------------------------------------------------------------------------------
# Stored once


def test_resending_a_document_adds_a_receipt_each_time_but_stores_its_payload_once(source: Source) -> None:
    document = chat("resent")

    outcomes = [conversation_ingest(source=source, document=document).outcome for _ in range(5)]

    assert outcomes == ["created"] + ["unchanged"] * 4
    assert IngestionReceipt.objects.count() == 5
    payload = ReceiptPayload.objects.get()
    assert payload.content == canonical_json(document).encode()  # a document given as a value: its canonical JSON
    assert set(IngestionReceipt.objects.values_list("payload_id", "payload_sha256")) == {
        (payload.sha256, hashlib.sha256(payload.content).hexdigest())
    }


@pytest.mark.postgres  # elsewhere the bulk endpoint takes the ordinary path
def test_the_bulk_path_stores_a_batchs_payloads_in_one_statement_and_a_resent_batch_adds_none(
    source: Source,
) -> None:
    documents = [chat(f"bulk-{n}") for n in range(30)]

    def payload_inserts(queries: CaptureQueriesContext) -> int:
        return sum('INSERT INTO "chats_receiptpayload"' in query["sql"] for query in queries.captured_queries)

    with CaptureQueriesContext(connection) as first:
        conversations_ingest_bulk(source=source, documents=documents)
    with CaptureQueriesContext(connection) as again:
        results = conversations_ingest_bulk(source=source, documents=documents)

    assert {result.outcome for result in results} == {"unchanged"}
    assert (payload_inserts(first), payload_inserts(again)) == (1, 1)  # one statement per batch, not per document
    assert IngestionReceipt.objects.count() == 60
    assert ReceiptPayload.objects.count() == 30


def test_a_payload_keeps_the_exact_bytes_compressed_and_shows_json_or_escaped_text() -> None:
    json_body = b'{"b": 1.0,  "a": [2, "caf\\u00e9"]}\n'
    latin_1 = "café au lait, s'il vous plaît\x00".encode("latin-1")
    generator = random.Random(7)
    noise = bytes(generator.randrange(0x80, 0xC0) for _ in range(4096))  # continuation bytes alone: not UTF-8

    as_json, as_text, as_noise = (ReceiptPayload.of(body) for body in (json_body, latin_1, noise))

    assert (as_json.content, as_text.content, as_noise.content) == (json_body, latin_1, noise)
    assert as_json.sha256 == hashlib.sha256(json_body).hexdigest() and as_json.size_bytes == len(json_body)
    assert as_json.shown == ShownPayload(is_json=True, document={"b": 1.0, "a": [2, "café"]})
    assert as_text.shown == ShownPayload(is_json=False, text="caf\\xe9 au lait, s'il vous pla\\xeet\\x00")
    # Bytes that are not UTF-8 are stored as bytes: about their own size, where escaped text (\xNN) took four times.
    assert len(as_noise.compressed) <= len(noise) + 64
    assert len(as_noise.shown.text) == 4 * len(noise)


# --------------------------------------------------------------------------------------------------------------
# Retention


def test_prune_removes_old_payloads_and_keeps_the_receipts_their_hashes_sizes_and_outcomes(
    source: Source, admin_user: User
) -> None:
    old = conversation_ingest(source=source, document=chat("old")).receipt
    refused = conversation_ingest(source=source, document={"chat_id": "empty", "main_messages": []}).receipt
    shared = conversation_ingest(source=source, document=chat("shared")).receipt
    age(IngestionReceipt.objects.all(), 40)
    resent = conversation_ingest(source=source, document=chat("shared")).receipt  # today: names shared's payload
    recent = conversation_ingest(source=source, document=chat("recent")).receipt
    before = kept_columns()

    result = receipt_payloads_prune(older_than_days=30, actor=admin_user)

    assert kept_columns() == before  # every receipt stays, as it was
    pruned = set(IngestionReceipt.objects.filter(payload__isnull=True).values_list("pk", flat=True))
    assert pruned == {old.pk, refused.pk, shared.pk}
    assert set(ReceiptPayload.objects.values_list("sha256", flat=True)) == {
        resent.payload_sha256,  # = shared's: a newer receipt still names it
        recent.payload_sha256,
    }
    assert (result.receipts, result.payloads) == (3, 2)
    assert result.payload_bytes == old.size_bytes + refused.size_bytes
    event = AuditEvent.objects.get(action="receipt.payloads_pruned")
    assert (event.actor, event.target_type, event.target_id) == (admin_user, "receipts", "all")
    assert event.after == {
        "older_than_days": 30,
        "cutoff": result.cutoff.isoformat(),
        "receipts": 3,
        "payloads_deleted": 2,
        "payload_bytes_deleted": result.payload_bytes,
        "stored_bytes_deleted": result.stored_bytes,
    }


def test_a_dry_run_counts_what_a_prune_removes_and_changes_nothing(source: Source, admin_user: User) -> None:
    for n in range(4):
        conversation_ingest(source=source, document=chat(f"c-{n}"))
    conversation_ingest(source=source, document=chat("c-0"))  # a second receipt of c-0's payload
    age(IngestionReceipt.objects.all(), 10)
    conversation_ingest(source=source, document=chat("c-1"))  # today: keeps c-1's payload
    stored = list(ReceiptPayload.objects.values_list("sha256", flat=True))

    counted = receipt_payloads_prune(older_than_days=7, actor=admin_user, dry_run=True)

    assert list(ReceiptPayload.objects.values_list("sha256", flat=True)) == stored
    assert not IngestionReceipt.objects.filter(payload__isnull=True).exists()
    assert not AuditEvent.objects.filter(action="receipt.payloads_pruned").exists()
    done = receipt_payloads_prune(older_than_days=7, actor=admin_user)
    assert (
        (counted.receipts, counted.payloads, counted.payload_bytes, counted.stored_bytes)
        == (
            done.receipts,
            done.payloads,
            done.payload_bytes,
            done.stored_bytes,
        )
        == (5, 3, done.payload_bytes, done.stored_bytes)
    )


def test_prune_goes_in_set_based_steps_whatever_the_number_of_receipts(
    source: Source, admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    def prune_queries(receipts: int) -> int:
        for n in range(receipts):
            conversation_ingest(source=source, document=chat(f"n-{receipts}-{n}"))
        # One time for all (as a bulk batch stores them): steps must not stop at a time many receipts share.
        age(IngestionReceipt.objects.filter(payload__isnull=False), 3)
        with CaptureQueriesContext(connection) as queries:
            result = receipt_payloads_prune(older_than_days=1, actor=admin_user)
        assert (result.receipts, result.payloads) == (receipts, receipts)
        return len(queries)

    assert prune_queries(3) == prune_queries(25)  # no query per receipt
    monkeypatch.setattr(receipt_services, "PRUNE_BATCH", 4)
    # In steps of 4: 3 receipts take one step, 7 two and 10 three, however many share one time; each step costs
    # the same few queries.
    one, two, three = prune_queries(3), prune_queries(7), prune_queries(10)
    assert three - two == two - one > 0
    assert not IngestionReceipt.objects.filter(payload__isnull=False).exists()
    assert not ReceiptPayload.objects.exists()


def test_prune_of_selected_receipts_keeps_the_payloads_of_the_others(source: Source, admin_user: User) -> None:
    receipts = [conversation_ingest(source=source, document=chat(f"s-{n}")).receipt for n in range(3)]
    age(IngestionReceipt.objects.all(), 5)

    result = receipt_payloads_prune(
        older_than_days=0, actor=admin_user, receipts=IngestionReceipt.objects.filter(pk=receipts[0].pk)
    )

    assert result.receipts == 1
    assert list(IngestionReceipt.objects.filter(payload__isnull=True).values_list("pk", flat=True)) == [receipts[0].pk]
    assert ReceiptPayload.objects.count() == 2
    assert AuditEvent.objects.get(action="receipt.payloads_pruned").target_id == "selected"


def test_a_prune_that_finds_nothing_records_nothing(source: Source, admin_user: User) -> None:
    conversation_ingest(source=source, document=chat("fresh"))

    result = receipt_payloads_prune(older_than_days=30, actor=admin_user)

    assert result.receipts == 0 and ReceiptPayload.objects.count() == 1
    assert not AuditEvent.objects.filter(action="receipt.payloads_pruned").exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_prune_racing_an_ingestion_of_the_same_bytes_keeps_the_payload_the_new_receipt_names(
    source: Source, admin_user: User
) -> None:
    document = chat("raced")
    conversation_ingest(source=source, document=document)
    age(IngestionReceipt.objects.all(), 40)
    pruned: list[int] = []

    def prune() -> None:
        try:
            pruned.append(receipt_payloads_prune(older_than_days=30, actor=admin_user).payloads)
        finally:
            connection.close()

    # The resend has stored its payload (already there) and not committed when the prune starts: the prune must
    # wait for it, then see its receipt and keep the payload (with ON CONFLICT DO NOTHING it deleted it, and the
    # resend failed at COMMIT on its foreign key).
    with transaction.atomic():
        resend = conversation_ingest(source=source, document=document)
        racing = threading.Thread(target=prune)
        racing.start()
        racing.join(timeout=0.5)
        assert racing.is_alive()  # waiting for this transaction's lock on the payload
    racing.join(timeout=10)

    assert pruned == [0]
    assert ReceiptPayload.objects.filter(pk=resend.receipt.payload_sha256).exists()
    assert IngestionReceipt.objects.filter(payload__isnull=True).count() == 1
