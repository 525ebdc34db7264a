"""Create (or reset) the local demo admin and print its password. For `make run` on a developer machine only."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from chats import services


class Command(BaseCommand):
    help = "Create or reset the demo admin (and a demo reviewer) with fresh passwords, and print them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError("create_demo_admin is for local demo runs only (DEBUG=1).")
        password = secrets.token_urlsafe(12)
        reviewer_password = secrets.token_urlsafe(12)
        with transaction.atomic():
            actor = services.CommandActor("create_demo_admin")
            admin = self._user(username)
            before = services.audit_snapshot(admin) if admin.pk else None
            admin.is_staff = admin.is_superuser = True
            admin.set_password(password)
            admin.save()
            services.audit_record_saved(actor=actor, obj=admin, before=before)
            reviewer = self._user("reviewer")
            before = services.audit_snapshot(reviewer) if reviewer.pk else None
            reviewer.set_password(reviewer_password)
            reviewer.save()
            reviewer.groups.add(Group.objects.get(name="Reviewers"))
            services.audit_record_saved(actor=actor, obj=reviewer, before=before)
        self.stdout.write("Sign in at http://127.0.0.1:8000/ with")
        self.stdout.write(f"  admin:    {username} / {password}")
        self.stdout.write(f"  reviewer: reviewer / {reviewer_password}")

    @staticmethod
    def _user(username: str) -> User:
        """The stored user, or a new one not saved yet (so that its creation is audited as such)."""
        return User.objects.filter(username=username).first() or User(username=username)
