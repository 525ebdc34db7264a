"""Print the SQL that distributes this database by conversation with Citus (chats.citus_placement, docs/SCALING.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from chats.citus_placement import citus_ddl


class Command(BaseCommand):
    help = "Print the statements that distribute this (migrated, PostgreSQL) database by conversation with Citus."

    def handle(self, *args: object, **options: object) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("citus_ddl reads a PostgreSQL database's catalog; DATABASE_URL names another engine.")
        self.stdout.write(citus_ddl().text(), ending="")
