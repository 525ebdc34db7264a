"""Create (or reset) the local demo admin and print its password. For `make run` on a developer machine only."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Create or reset the demo admin (and a demo reviewer) with fresh passwords, and print them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError("create_demo_admin is for local demo runs only (DEBUG=1).")
        password = secrets.token_urlsafe(12)
        admin, _ = User.objects.get_or_create(username=username)
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()
        reviewer, _ = User.objects.get_or_create(username="reviewer")
        reviewer_password = secrets.token_urlsafe(12)
        reviewer.set_password(reviewer_password)
        reviewer.save()
        reviewer.groups.add(Group.objects.get(name="Reviewers"))
        self.stdout.write("Sign in at http://127.0.0.1:8000/ with")
        self.stdout.write(f"  admin:    {username} / {password}")
        self.stdout.write(f"  reviewer: reviewer / {reviewer_password}")
