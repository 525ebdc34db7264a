"""Send the ingest task again for receipts still `queued` after some minutes: their message was lost with the
broker, or their task gave up. Safe to run at any time and from cron (every few minutes): a receipt two tasks name
is applied once, and one already done is skipped.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chats.services.ingest_queue import queued_receipts_requeue


class Command(BaseCommand):
    help = "Send the ingest task again for receipts still queued after --minutes (default 15)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--minutes", type=int, default=15, help="Resend receipts queued for longer than this (default 15)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        minutes = options["minutes"]
        if minutes < 0:
            raise CommandError("--minutes cannot be negative")
        count = queued_receipts_requeue(older_than=timedelta(minutes=minutes))
        self.stdout.write(f"Sent {count} receipt(s) queued for more than {minutes} minute(s) again.")
