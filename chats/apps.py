from django.apps import AppConfig
from django.urls import register_converter
from django.urls.converters import get_converters


class ChatsConfig(AppConfig):
    name = "chats"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chats.converters import ArtifactIdConverter

        # Before any URLconf is read: the pages' and the API's artifact URLs use it.
        if "artifact_id" not in get_converters():
            register_converter(ArtifactIdConverter, "artifact_id")
