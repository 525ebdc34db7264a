"""The audit log becomes a hash chain (chats.services.audit): every event stores the hash of the event before it and
its own, over its content and that link. The events stored before are chained here in id order, with the hash the
services use; on PostgreSQL the append-only trigger (migration 0005) is set aside for that one update, inside this
migration's transaction, and set back before it commits. Then a unique constraint keeps the chain from forking."""

from django.db import migrations, models

from chats.models import AUDIT_GENESIS_HASH
from chats.services.audit_chain import CHAIN_FIELDS, audit_chain_digest

# Events read, and updated, per round.
_BATCH = 1000
_TRIGGER = "chats_auditevent_append_only"


def chain_stored_events(apps, schema_editor):
    AuditEvent = apps.get_model("chats", "AuditEvent")
    connection = schema_editor.connection
    table = connection.ops.quote_name(AuditEvent._meta.db_table)
    postgres = connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {_TRIGGER}", params=None)
    update = f"UPDATE {table} SET prev_hash = %s, event_hash = %s WHERE id = %s"
    prev_hash = AUDIT_GENESIS_HASH
    pending = []
    rows = AuditEvent.objects.order_by("id").values_list(*CHAIN_FIELDS)
    with connection.cursor() as cursor:
        for row in rows.iterator(chunk_size=_BATCH):
            fields = dict(zip(CHAIN_FIELDS, row, strict=True))
            event_hash = audit_chain_digest(fields, prev_hash)
            pending.append((prev_hash, event_hash, fields["id"]))
            prev_hash = event_hash
            if len(pending) >= _BATCH:
                cursor.executemany(update, pending)
                pending.clear()
        if pending:
            cursor.executemany(update, pending)
    if postgres:
        schema_editor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {_TRIGGER}", params=None)


class Migration(migrations.Migration):
    dependencies = [("chats", "0009_injection_policy_verdicts")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="prev_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="auditevent",
            name="event_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(chain_stored_events, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="auditevent",
            constraint=models.UniqueConstraint(fields=("prev_hash",), name="audit_chain_prev_unique"),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(("action", "audit.verified")), fields=["-id"], name="audit_verified_idx"
            ),
        ),
    ]
