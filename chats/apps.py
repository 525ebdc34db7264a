from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate
from django.urls import register_converter
from django.urls.converters import get_converters


def search_cap_apply(using: str = "default", **kwargs: object) -> None:
    from django.conf import settings
    from django.db import connections

    from chats.search_schema import search_schema_apply

    search_schema_apply(connections[using], settings.MASTERBRAIN_SEARCH_MESSAGE_CHARS)


class ChatsConfig(AppConfig):
    name = "chats"
    verbose_name = "Conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chats.citus_placement import schema_problems
        from chats.converters import ArtifactIdConverter
        from chats.roles import ensure_role_groups

        # After the auth app's own receiver has made the permissions, and again after a test's flush.
        post_migrate.connect(ensure_role_groups, sender=self, dispatch_uid="chats.ensure_role_groups")
        # The message vectors' cap follows MASTERBRAIN_SEARCH_MESSAGE_CHARS from the next migrate on.
        post_migrate.connect(search_cap_apply, sender=self, dispatch_uid="chats.search_cap_apply")

        # `manage.py check` (and so every test run and deployment) refuses a schema that could no longer be
        # distributed by conversation (docs/SCALING.md).
        @checks.register(checks.Tags.models)
        def distributable(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
            return [checks.Error(problem, id="chats.E001") for problem in schema_problems()]

        # Before any URLconf is read: the pages' and the API's artifact URLs use it.
        if "artifact_id" not in get_converters():
            register_converter(ArtifactIdConverter, "artifact_id")
