"""Delete the views recorded before the retention period (read audit, chats.services.reads). Audit events, the
write log, are never pruned.

Run it daily (cron, a systemd timer). MASTERBRAIN_READ_AUDIT_RETENTION_DAYS (default 90; 0: keep them forever) is
the period; `--days N` overrides it for one run (0 with --days: every view up to now).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from chats.management.retention import retention_days
from chats.services.audit import CommandActor
from chats.services.reads import read_audit_prune


class Command(BaseCommand):
    help = "Delete the read events (who opened a conversation) older than the retention period."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            help="Delete the views older than this many days (default: MASTERBRAIN_READ_AUDIT_RETENTION_DAYS; "
            "0 with --days: every view).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = retention_days(
            self, options["days"], setting="MASTERBRAIN_READ_AUDIT_RETENTION_DAYS", kept="Views", verb="delete"
        )
        if days is None:
            return
        result = read_audit_prune(older_than_days=days, actor=CommandActor("prune_read_audit"))
        self.stdout.write(
            f"Deleted {result.deleted} read event(s) recorded before {result.cutoff.isoformat()}. "
            "Audit events are never pruned."
        )
