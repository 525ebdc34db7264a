"""Leases, reviews and resolutions name their item's conversation, as every row under a conversation does, and the
unique constraints of the rows under a conversation include it (chats.citus_placement: the schema a distribution by
conversation needs). The new columns are filled from each row's item before they become NOT NULL."""

import django.db.models.deletion
from django.db import migrations, models



def _fill(apps, schema_editor):
    QueueItem = apps.get_model("chats", "QueueItem")
    for name in ("Lease", "Review", "Resolution"):
        model = apps.get_model("chats", name)
        model.objects.update(
            conversation_id=models.Subquery(
                QueueItem.objects.filter(pk=models.OuterRef("item_id")).values("conversation_id")[:1]
            )
        )


def _conversation(null: bool) -> models.ForeignKey:
    return models.ForeignKey(
        null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="chats.conversation"
    )


class Migration(migrations.Migration):
    dependencies = [("chats", "0016_datasets")]

    operations = [
        migrations.RemoveConstraint(model_name="datasetitem", name="dataset_item_unique_queue_item"),
        migrations.RemoveConstraint(model_name="lease", name="lease_unique_per_reviewer"),
        migrations.RemoveConstraint(model_name="review", name="review_unique_per_reviewer"),
        *[
            migrations.AddField(model_name=model, name="conversation", field=_conversation(null=True))
            for model in ("lease", "review", "resolution")
        ],
        migrations.RunPython(_fill, migrations.RunPython.noop),
        *[
            migrations.AlterField(model_name=model, name="conversation", field=_conversation(null=False))
            for model in ("lease", "review", "resolution")
        ],
        migrations.AddConstraint(
            model_name="datasetitem",
            constraint=models.UniqueConstraint(
                fields=("conversation", "dataset", "queue_item"), name="dataset_item_unique_queue_item"
            ),
        ),
        migrations.AddConstraint(
            model_name="lease",
            constraint=models.UniqueConstraint(
                fields=("conversation", "item", "reviewer"), name="lease_unique_per_reviewer"
            ),
        ),
        migrations.AddConstraint(
            model_name="review",
            constraint=models.UniqueConstraint(
                fields=("conversation", "item", "reviewer"), name="review_unique_per_reviewer"
            ),
        ),
    ]
