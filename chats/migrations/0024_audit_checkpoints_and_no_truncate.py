"""The audit log can no longer be emptied quietly: on PostgreSQL a statement trigger refuses TRUNCATE of the audit
log (the row trigger of migration 0005 refuses UPDATE and DELETE, not TRUNCATE, which is a statement), and the heads
verify_audit finds intact are kept as checkpoints in a table of their own (AuditCheckpoint), append-only and never
truncated in the same way. A log emptied or cut short around the triggers no longer verifies as a new chain: it
ends before the last checkpoint, or its event at a checkpoint's count has another hash.

The triggers are ordinary ones (ENABLE, firing when session_replication_role is `origin` or `local`): the test
suite's flush sets them aside inside its own transaction (tests/flush.py). Only a table's owner or a superuser can
do that, or drop them; docs/SECURITY.md says what such a role can still do and how a checkpoint kept outside the
database finds it. On SQLite there is no trigger.
"""

import django.utils.timezone
from django.db import migrations, models

TRIGGERS_SQL = """
CREATE OR REPLACE FUNCTION chats_refuse_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: TRUNCATE refused', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_auditevent_no_truncate
    BEFORE TRUNCATE ON chats_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION chats_refuse_truncate();

CREATE OR REPLACE FUNCTION chats_auditcheckpoint_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit checkpoints are append-only: % of checkpoint % refused', TG_OP, OLD.id
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_auditcheckpoint_append_only
    BEFORE UPDATE OR DELETE ON chats_auditcheckpoint
    FOR EACH ROW EXECUTE FUNCTION chats_auditcheckpoint_append_only();

CREATE TRIGGER chats_auditcheckpoint_no_truncate
    BEFORE TRUNCATE ON chats_auditcheckpoint
    FOR EACH STATEMENT EXECUTE FUNCTION chats_refuse_truncate();
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS chats_auditcheckpoint_no_truncate ON chats_auditcheckpoint;
DROP TRIGGER IF EXISTS chats_auditcheckpoint_append_only ON chats_auditcheckpoint;
DROP FUNCTION IF EXISTS chats_auditcheckpoint_append_only();
DROP TRIGGER IF EXISTS chats_auditevent_no_truncate ON chats_auditevent;
DROP FUNCTION IF EXISTS chats_refuse_truncate();
"""


def add_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS_SQL, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [("chats", "0021_foreign_keys_indexed_by_their_composite_indexes")]

    operations = [
        migrations.CreateModel(
            name="AuditCheckpoint",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("events", models.BigIntegerField()),
                ("last_event_id", models.BigIntegerField()),
                ("head_hash", models.CharField(max_length=64)),
                ("recorded_by", models.CharField(max_length=150)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
            ],
            options={
                "ordering": ["-id"],
                "indexes": [models.Index(fields=["events", "id"], name="audit_checkpoint_events_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("events__gte", 1)), name="audit_checkpoint_events_positive"
                    )
                ],
            },
        ),
        migrations.RunPython(add_triggers, drop_triggers),
    ]
