"""Give a person exactly the roles named (their other groups stay), audited with this command as the actor."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chats.management.people import add_person_arguments, refusal_as_command_error
from chats.services.audit import CommandActor
from chats.services.people import person_roles_of, person_roles_set


class Command(BaseCommand):
    help = (
        "Set a person's roles (--role reviewer|lead|auditor|admin, repeatable): their role groups and the staff "
        "and superuser flags become exactly these. Audited with this command as the actor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_person_arguments(parser)

    def handle(self, *args: object, username: str, roles: list[str], **options: object) -> None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}: create_user makes one.")
        before = person_roles_of(user)
        with refusal_as_command_error():
            person_roles_set(user=user, roles=roles, actor=CommandActor("set_role"))
        after = person_roles_of(User.objects.get(pk=user.pk))
        self.stdout.write(f"{user.username}: {', '.join(before) or 'no role'} -> {', '.join(after)}")
