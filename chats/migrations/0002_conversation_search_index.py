"""GIN index over Conversation.search_vector for ?q= full-text search; PostgreSQL only (SQLite has no tsvector)."""

from django.db import migrations


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS conv_search_vector_idx ON chats_conversation USING gin (search_vector)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS conv_search_vector_idx")


class Migration(migrations.Migration):
    dependencies = [("chats", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
