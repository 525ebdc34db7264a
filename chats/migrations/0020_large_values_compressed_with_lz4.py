"""The large values of a conversation's rows are compressed with lz4 rather than pglz, on PostgreSQL.

TOAST compresses any value of a row past about 2 KB: a tool result of 1-5 KB is compressed three times per message
(its parts, its search text, and the message as received). pglz took about a quarter of the database's time of a
bulk COPY of messages; lz4 compresses the same values at several times the speed, to about the same size on this
JSON. Values already stored keep their pglz compression (PostgreSQL reads both); new values are written with lz4.
A PostgreSQL built without lz4 keeps pglz, and SQLite has no TOAST: both are left as they are.
"""

from django.db import migrations

COLUMNS = {
    "chats_message": ("parts", "text", "raw", "extra", "reasoning"),
    "chats_toolcall": ("arguments", "parsed_arguments", "extra"),
    "chats_injectedartifact": ("payload",),
}


def _lz4_available(schema_editor) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return bool(row and row[0])


def _set_compression(method):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql" or not _lz4_available(schema_editor):
            return
        for table, columns in COLUMNS.items():
            changes = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in columns)
            schema_editor.execute(f"ALTER TABLE {table} {changes}")

    return apply


class Migration(migrations.Migration):
    dependencies = [("chats", "0019_export_jobs_and_queue_rule_runs")]

    operations = [migrations.RunPython(_set_compression("lz4"), _set_compression("pglz"))]
