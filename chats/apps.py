from django.apps import AppConfig


class ChatsConfig(AppConfig):
    name = "chats"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"
