"""Make a personal API token for a reviewer, an auditor or a staff member; the token is printed once, last."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from chats.roles import person_roles
from chats.services.audit import CommandActor
from chats.services.sources import api_key_create


class Command(BaseCommand):
    help = "Create a personal API token (Authorization: Api-Key <token>) for USERNAME and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A note to tell the token apart (shown in the admin).")
        parser.add_argument(
            "--expires-in-days", type=int, default=None, help="The token stops working after this many days."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: options["username"]})
        except user_model.DoesNotExist:
            raise CommandError(f"no user named {options['username']!r}") from None
        if not user.is_active:
            raise CommandError(f"{options['username']!r} is inactive")
        if not person_roles(user).can_read:
            raise CommandError(
                f"{options['username']!r} is neither a reviewer, an auditor nor staff: a token would read nothing"
            )
        days = options["expires_in_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-in-days must be 1 or more")
        expires_at = timezone.now() + timedelta(days=days) if days else None
        key, raw = api_key_create(
            user=user,
            name=options["name"] or "personal token",
            expires_at=expires_at,
            actor=CommandActor("create_api_token"),
        )
        until = f", valid until {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else ""
        self.stderr.write(f"Token {key.prefix}… for {user.get_username()}{until}; it is shown once, keep it secret:")
        self.stdout.write(raw)
