"""python manage.py create_source NAME: create a source (or reuse it) and print a new API key as the last line."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from chats.services.audit import CommandActor
from chats.services.sources import api_key_create, source_get_or_create


class Command(BaseCommand):
    help = "Create a source (or reuse an existing one) and print a new API key for it as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The source's name, e.g. masterbrain-prod.")
        parser.add_argument("--key-name", default="", help="A label for the key, e.g. the host that uses it.")

    def handle(self, *args: object, name: str, key_name: str, **options: object) -> None:
        actor = CommandActor("create_source")
        source, created = source_get_or_create(name=name, actor=actor)
        _, raw_key = api_key_create(source=source, name=key_name or "created by create_source", actor=actor)
        self.stdout.write(f"{'Created' if created else 'Reusing'} source {source.name!r}.")
        self.stdout.write("New API key (shown once; only its hash is stored). Send it as: Authorization: Api-Key <key>")
        self.stdout.write(raw_key)
