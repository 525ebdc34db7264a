"""Create a person with a role and print a generated password to give them (shown once, only its hash stored)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from chats.management.people import add_person_arguments, refusal_as_command_error
from chats.services.audit import CommandActor
from chats.services.people import person_create


class Command(BaseCommand):
    help = (
        "Create a person with one or more roles (--role reviewer|lead|auditor|admin, repeatable) and print a "
        "generated password, shown once. Audited with this command as the actor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_person_arguments(parser)
        parser.add_argument("--email", default="")

    def handle(self, *args: object, username: str, roles: list[str], email: str, **options: object) -> None:
        with refusal_as_command_error():
            user, password = person_create(
                username=username, roles=roles, email=email, actor=CommandActor("create_user")
            )
        self.stdout.write(f"Created {user.username} ({', '.join(roles)}). Their password, shown once:")
        self.stdout.write(password)
