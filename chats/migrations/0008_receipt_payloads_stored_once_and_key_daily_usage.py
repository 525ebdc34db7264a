"""Receipt payloads stored once per distinct content, compressed, in a table of their own; bytes per key per day.

A receipt kept its whole payload in its own row (JSON, or text for a body that was not JSON: a body that was not
UTF-8 as escaped text, four times its size). Now it names a `ReceiptPayload` by the SHA-256 of the bytes, which
are stored once, zlib-compressed (see the model for why zlib), however many receipts name them, and which
retention can remove while the receipt stays (`prune_receipt_payloads`).

The existing payloads move into the new table. The bytes they arrived as are gone (the JSON was kept as a value,
the text with its undecodable bytes escaped), so a JSON payload becomes its canonical JSON text (sorted keys, no
whitespace: the text its `payload_sha256` was computed from) and a text payload that text in UTF-8; each receipt
keeps the hash it was given. On PostgreSQL the compressed column is stored EXTERNAL: TOAST does not try to
compress it again. Auditors, who read receipts, read the payloads' own admin too.
"""

import json
import zlib

import django.db.models.deletion
from django.db import migrations, models

import chats.models.records

BATCH = 500


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def store_compressed_values_uncompressed(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE chats_receiptpayload ALTER COLUMN compressed SET STORAGE EXTERNAL")


def move_payloads(apps, schema_editor):
    import hashlib

    Receipt = apps.get_model("chats", "IngestionReceipt")
    Payload = apps.get_model("chats", "ReceiptPayload")
    rows = Receipt.objects.order_by("pk").values_list("pk", "legacy_payload", "payload_text", "size_bytes")
    batch = []

    def flush():
        payloads = {}
        receipts = []
        for pk, document, text, size in batch:
            if text:
                content = text.encode("utf-8", "surrogatepass")
            elif document is None and size == 0:
                content = b""  # an empty body
            else:
                content = _canonical(document).encode("utf-8", "surrogatepass")
            sha = hashlib.sha256(content).hexdigest()
            payloads[sha] = Payload(sha256=sha, compressed=zlib.compress(content, 6), size_bytes=len(content))
            receipts.append(Receipt(pk=pk, payload_id=sha))
        Payload.objects.bulk_create(payloads.values(), ignore_conflicts=True)
        Receipt.objects.bulk_update(receipts, ["payload"])
        batch.clear()

    for row in rows.iterator(chunk_size=BATCH):
        batch.append(row)
        if len(batch) == BATCH:
            flush()
    if batch:
        flush()


def restore_payloads(apps, schema_editor):
    Receipt = apps.get_model("chats", "IngestionReceipt")
    batch = []

    def flush():
        Receipt.objects.bulk_update(batch, ["legacy_payload", "payload_text"])
        batch.clear()

    for receipt in Receipt.objects.filter(payload__isnull=False).select_related("payload").iterator(chunk_size=BATCH):
        content = zlib.decompress(receipt.payload.compressed)
        try:
            if b"\\u0000" in content:
                raise ValueError("jsonb holds no NUL")
            receipt.legacy_payload, receipt.payload_text = json.loads(content), ""
        except ValueError:
            receipt.legacy_payload = None
            receipt.payload_text = content.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
        batch.append(receipt)
        if len(batch) == BATCH:
            flush()
    if batch:
        flush()


def auditors_view_payloads(apps, schema_editor):
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after all migrations; make sure they exist now.
    create_permissions(global_apps.get_app_config("chats"), apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.filter(content_type__app_label="chats", codename="view_receiptpayload")
    for group in Group.objects.filter(name="Auditors"):
        group.permissions.add(*view)


def auditors_no_longer_view_payloads(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.filter(content_type__app_label="chats", codename="view_receiptpayload")
    for group in Group.objects.filter(name="Auditors"):
        group.permissions.remove(*view)


class Migration(migrations.Migration):
    dependencies = [
        ("chats", "0007_search_vectors_built_apart"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReceiptPayload",
            fields=[
                (
                    "sha256",
                    chats.models.records.Sha256Field(editable=False, primary_key=True, serialize=False),
                ),
                ("compressed", models.BinaryField(editable=False)),
                ("size_bytes", models.PositiveIntegerField(editable=False)),
            ],
            options={"verbose_name": "receipt payload"},
        ),
        migrations.RunPython(store_compressed_values_uncompressed, migrations.RunPython.noop),
        migrations.CreateModel(
            name="ApiKeyDailyUsage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("bytes_received", models.BigIntegerField(default=0)),
                (
                    "api_key",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="daily_usage", to="chats.apikey"
                    ),
                ),
            ],
            options={
                "verbose_name": "API key daily usage",
                "verbose_name_plural": "API key daily usage",
                "constraints": [
                    models.UniqueConstraint(fields=("api_key", "day"), name="key_usage_key_day_unique"),
                ],
            },
        ),
        migrations.RenameField(model_name="ingestionreceipt", old_name="payload", new_name="legacy_payload"),
        migrations.AddField(
            model_name="ingestionreceipt",
            name="payload",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="receipts",
                to="chats.receiptpayload",
            ),
        ),
        migrations.RunPython(move_payloads, restore_payloads),
        migrations.RemoveField(model_name="ingestionreceipt", name="legacy_payload"),
        migrations.RemoveField(model_name="ingestionreceipt", name="payload_text"),
        migrations.AddIndex(
            model_name="ingestionreceipt",
            index=models.Index(
                condition=models.Q(("payload__isnull", False)), fields=["payload"], name="receipt_payload_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="ingestionreceipt",
            index=models.Index(
                condition=models.Q(("payload__isnull", False)), fields=["created_at"], name="receipt_payload_age_idx"
            ),
        ),
        migrations.RunPython(auditors_view_payloads, auditors_no_longer_view_payloads),
    ]
