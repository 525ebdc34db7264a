"""Send the ingest task again for receipts still `queued` after some minutes: their message was lost with the
broker, or their task gave up. Safe to run at any time and from cron (every few minutes): a receipt two tasks name
is applied once, and one already done is skipped. Each task names one source's receipts (``--source`` takes one
source only, ``--receipt`` the receipts named, however recent), so that one source's document never holds up
another source's.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chats.models import Source
from chats.services.ingest_queue import queued_receipts_requeue


class Command(BaseCommand):
    help = (
        "Send the ingest task again for receipts still queued after --minutes (default 15), one task per source; "
        "--source NAME: that source's only; --receipt UUID (repeatable): those receipts, however recent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--minutes", type=int, default=15, help="Resend receipts queued for longer than this (default 15)."
        )
        parser.add_argument("--source", help="Only the receipts of the source of this name.")
        parser.add_argument(
            "--receipt", action="append", default=[], help="Only this receipt (its uuid), whatever its age; repeatable."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        minutes = options["minutes"]
        if minutes < 0:
            raise CommandError("--minutes cannot be negative")
        source = None
        if options["source"] is not None:
            source = Source.objects.filter(name=options["source"]).first()
            if source is None:
                raise CommandError(f"no source is named {options['source']!r}")
        receipts = []
        for text in options["receipt"]:
            try:
                receipts.append(uuid.UUID(text))
            except ValueError:
                raise CommandError(f"--receipt takes a receipt's uuid, not {text!r}") from None
        count = queued_receipts_requeue(older_than=timedelta(minutes=minutes), source=source, receipt_uuids=receipts)
        if receipts:
            self.stdout.write(
                f"Sent {count} of the {len(receipts)} receipt(s) named again (the others are not queued)."
            )
        else:
            scope = f" of source {source.name!r}" if source is not None else ""
            self.stdout.write(f"Sent {count} receipt(s){scope} queued for more than {minutes} minute(s) again.")
