"""Create (or reset) the local demo admin and print its password. For `make run` on a developer machine only."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from chats.services.audit import CommandActor, audited


class Command(BaseCommand):
    help = "Create or reset the demo admin (and a demo reviewer) with fresh passwords, and print them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: object, username: str, **options: object) -> None:
        if not settings.DEBUG:
            raise CommandError("create_demo_admin is for local demo runs only (DEBUG=1).")
        password = secrets.token_urlsafe(12)
        reviewer_password = secrets.token_urlsafe(12)
        with transaction.atomic():
            actor = CommandActor("create_demo_admin")
            with audited(self._user(username), actor=actor) as admin:
                admin.is_staff = admin.is_superuser = True
                admin.set_password(password)
                admin.save()
            with audited(self._user("reviewer"), actor=actor) as reviewer:
                reviewer.set_password(reviewer_password)
                reviewer.save()
                reviewer.groups.add(Group.objects.get(name="Reviewers"))
        self.stdout.write("Sign in at http://127.0.0.1:8000/ with")
        self.stdout.write(f"  admin:    {username} / {password}")
        self.stdout.write(f"  reviewer: reviewer / {reviewer_password}")

    @staticmethod
    def _user(username: str) -> User:
        """The stored user, or a new one not saved yet (so that its creation is audited as such)."""
        return User.objects.filter(username=username).first() or User(username=username)
