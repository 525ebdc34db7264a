"""API keys may expire; on PostgreSQL the audit log becomes append-only.

The trigger rejects UPDATE and DELETE of audit rows, so no code path (not even a bug) can rewrite history. The
one change it lets through is the one Django makes when a user is deleted: `actor_id` set to NULL with every
other column unchanged (the row keeps `actor_username`). TRUNCATE, which only a test database flush issues, is
a statement, not a row change, and is not affected.
"""

from django.db import migrations, models

APPEND_ONLY_SQL = """
CREATE OR REPLACE FUNCTION chats_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % of audit event % rejected', TG_OP, OLD.id
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_auditevent_append_only
    BEFORE UPDATE OR DELETE ON chats_auditevent
    FOR EACH ROW EXECUTE FUNCTION chats_auditevent_append_only();
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS chats_auditevent_append_only ON chats_auditevent;
DROP FUNCTION IF EXISTS chats_auditevent_append_only();
"""


def make_append_only(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY_SQL, params=None)


def undo_append_only(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [("chats", "0004_message_source_path")]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(make_append_only, undo_append_only),
    ]
