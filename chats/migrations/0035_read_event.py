"""The read audit's rows are read events: ConversationView becomes ReadEvent, and its table chats_conversationview
becomes chats_readevent. Its indexes and its check constraint keep their names."""

from django.conf import settings
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('chats', '0034_search_vectors_as_rows_are_written'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameModel(old_name='ConversationView', new_name='ReadEvent'),
    ]
