"""Round trips through the database: a document stored, then exported in its own format, comes back as the
same-format round trip without the database gives it back. Most OpenAI-shaped messages are stored without a copy of
themselves as received (chats.formats.openai_messages.rebuilds_as_received); their exports must not tell."""

from __future__ import annotations

from typing import Any

import pytest

from chats.export import export_conversation
from chats.formats.openai_messages import OPENAI_MESSAGE_FORMATS
from chats.ingest import parse_document
from chats.models import Message, Source
from chats.selectors.exports import conversation_to_canonical
from chats.services.bulk_writer import conversations_ingest_bulk
from chats.services.ingestion import conversation_ingest

from .cases import comparable, input_cases

OPENAI_CASES = [case for case in input_cases() if case.values[0] in OPENAI_MESSAGE_FORMATS]


@pytest.mark.django_db
@pytest.mark.parametrize("bulk", [False, True], ids=["one", "bulk"])
@pytest.mark.parametrize(("format", "document"), OPENAI_CASES)
def test_a_stored_conversation_exports_in_its_format_as_the_document_came(format: str, document: Any, bulk: bool):
    source = Source.objects.create(name="s")
    if bulk:
        [result] = conversations_ingest_bulk(source=source, documents=[document], format=format)
    else:
        result = conversation_ingest(source=source, document=document, format=format)
    assert result.conversation is not None, result.errors

    exported = export_conversation(conversation_to_canonical(result.conversation), format)
    unstored = export_conversation(parse_document(document, format=format), format)

    assert comparable(format, exported.document) == comparable(format, unstored.document)
    assert exported.omitted == unstored.omitted


@pytest.mark.django_db
def test_most_openai_messages_keep_no_copy_of_themselves():
    source = Source.objects.create(name="s")
    for format, document in (case.values for case in OPENAI_CASES):
        conversation_ingest(source=source, document=document, format=format)
    kept = Message.objects.filter(raw__isnull=False).count()
    assert Message.objects.count() > 4 * kept
