"""What the commands that manage people (create_user, set_role) share: the person and the roles they name, and a
refusal of the people service as the command's error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError, CommandParser

from chats.errors import InvalidInput
from chats.services.people import ROLES


def add_person_arguments(parser: CommandParser) -> None:
    """The username, and `--role` (repeatable, at least one) as `roles`."""
    parser.add_argument("username")
    parser.add_argument("--role", action="append", choices=ROLES, required=True, dest="roles")


@contextmanager
def refusal_as_command_error() -> Iterator[None]:
    """A service's refusal (`InvalidInput`) raised as the command's error, with its message."""
    try:
        yield
    except InvalidInput as error:
        raise CommandError(str(error)) from error
