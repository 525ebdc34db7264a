"""Search vectors built in the statement that writes the row, per message, instead of per conversation by an
indexer afterwards: nothing waits to be indexed, and appending to a conversation indexes only what it adds.

- chats_message gets `search_vector` (PostgreSQL only: SQLite has no tsvector, and searches text), built by a
  BEFORE INSERT OR UPDATE OF text trigger from the message's first 20,000 characters (the setting
  MASTERBRAIN_SEARCH_MESSAGE_CHARS replaces the cap on the next migrate: chats.search_schema), with a GIN index;
- the conversation's vector becomes its title's (`title_vector`), built the same way;
- the stale marks and their index go: there is no backlog to mark.

Existing rows are given their vectors here, as part of the migration.
"""

from django.db import migrations

DEFAULT_CAP = 20_000

FORWARD_SQL = f"""
ALTER TABLE chats_message ADD COLUMN search_vector tsvector;

CREATE OR REPLACE FUNCTION chats_message_search_vector() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := to_tsvector('english'::regconfig, left(NEW.text, {DEFAULT_CAP}));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_message_search_vector
    BEFORE INSERT OR UPDATE OF text ON chats_message
    FOR EACH ROW EXECUTE FUNCTION chats_message_search_vector();

UPDATE chats_message SET search_vector = to_tsvector('english'::regconfig, left(text, {DEFAULT_CAP}));

CREATE INDEX msg_search_vector_idx ON chats_message USING gin (search_vector);

CREATE OR REPLACE FUNCTION chats_conversation_title_vector() RETURNS trigger AS $$
BEGIN
    NEW.title_vector := to_tsvector('english'::regconfig, NEW.title);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_conversation_title_vector
    BEFORE INSERT OR UPDATE OF title ON chats_conversation
    FOR EACH ROW EXECUTE FUNCTION chats_conversation_title_vector();

UPDATE chats_conversation SET title_vector = to_tsvector('english'::regconfig, title);

ALTER INDEX IF EXISTS conv_search_vector_idx RENAME TO conv_title_vector_idx;
"""

BACKWARD_SQL = """
ALTER INDEX IF EXISTS conv_title_vector_idx RENAME TO conv_search_vector_idx;
DROP TRIGGER IF EXISTS chats_conversation_title_vector ON chats_conversation;
DROP FUNCTION IF EXISTS chats_conversation_title_vector();
DROP INDEX IF EXISTS msg_search_vector_idx;
DROP TRIGGER IF EXISTS chats_message_search_vector ON chats_message;
DROP FUNCTION IF EXISTS chats_message_search_vector();
ALTER TABLE chats_message DROP COLUMN IF EXISTS search_vector;
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD_SQL)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD_SQL)


class Migration(migrations.Migration):
    dependencies = [("chats", "0033_trend_rollups")]

    operations = [
        migrations.RemoveIndex(model_name="conversation", name="conv_search_stale_idx"),
        migrations.RemoveField(model_name="conversation", name="search_stale"),
        migrations.RenameField(model_name="conversation", old_name="search_vector", new_name="title_vector"),
        migrations.RunPython(forward, backward),
    ]
