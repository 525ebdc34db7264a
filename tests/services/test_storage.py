"""How the bulk writer's rows are stored: a tool result once, large values compressed with lz4 (the rows
themselves are those of the ordinary path: tests/services/test_bulk_writer.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from chats.models import Source
from chats.services import bulk_writer

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _lz4_built_in() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return bool(row and row[0])


def test_a_large_tool_result_is_stored_once_and_compressed_with_lz4():
    assert _lz4_built_in(), "this PostgreSQL was built without lz4"
    result = '{"rows": [' + ", ".join(f'{{"well": "A{i}", "od600": 0.{i:04d}}}' for i in range(400)) + "]}"
    document = {
        "chat_id": "large-result",
        "messages": [
            {"role": "user", "content": "Read the plate."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_plate", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": result},
            # An image URL as a bare string: rebuilt, it would be {"url": ...}; this message keeps its copy.
            {
                "role": "user",
                "content": [{"type": "text", "text": result}, {"type": "image_url", "image_url": "x.png"}],
            },
        ],
    }
    [stored] = bulk_writer.conversations_ingest_bulk(source=Source.objects.create(name="s"), documents=[document])
    assert stored.outcome == "created" and len(result) > 10_000
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT role, pg_column_compression(parts), pg_column_compression(text), pg_column_compression(raw) "
            "FROM chats_message WHERE conversation_id = %s AND position >= 2 ORDER BY position",
            [stored.conversation.pk if stored.conversation else None],
        )
        # The tool result's parts give it back as received: it has no second copy (raw is NULL).
        assert cursor.fetchall() == [("tool", "lz4", "lz4", None), ("user", "lz4", "lz4", "lz4")]
