"""Give a person exactly the roles named (their other groups stay), audited with this command as the actor."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chats.errors import InvalidInput
from chats.services.audit import CommandActor
from chats.services.people import ROLES, person_roles_of, person_roles_set


class Command(BaseCommand):
    help = (
        "Set a person's roles (--role reviewer|lead|auditor|admin, repeatable): their role groups and the staff "
        "and superuser flags become exactly these. Audited with this command as the actor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", action="append", choices=ROLES, required=True, dest="roles")

    def handle(self, *args: object, username: str, roles: list[str], **options: object) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}: create_user makes one.")
        before = person_roles_of(user)
        try:
            person_roles_set(user=user, roles=roles, actor=CommandActor("set_role"))
        except InvalidInput as error:
            raise CommandError(str(error)) from error
        after = person_roles_of(User.objects.get(pk=user.pk))
        self.stdout.write(f"{user.username}: {', '.join(before) or 'no role'} -> {', '.join(after)}")
