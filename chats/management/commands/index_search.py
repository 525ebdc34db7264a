"""python manage.py index_search [--loop] [--batch N] [--interval S]: build the search vectors of the conversations
ingestion marked stale.

Run it once after an import, or with --loop beside the application servers (several may run at once: each takes
rows the others are not holding). Search finds stale conversations meanwhile, by reading their text.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from chats.services.search import INDEX_BATCH, search_index_stale


class Command(BaseCommand):
    help = "Build the full-text search vectors of stale conversations (once, or in a loop with --loop)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=INDEX_BATCH, help="Conversations per transaction.")
        parser.add_argument("--loop", action="store_true", help="Keep going, waiting --interval when none is stale.")
        parser.add_argument("--interval", type=float, default=1.0, help="Seconds to wait when none is stale.")

    def handle(self, *args: Any, batch: int, loop: bool, interval: float, **options: Any) -> None:
        total = search_index_stale(batch=batch)
        while loop:
            time.sleep(interval)
            total += search_index_stale(batch=batch)
        self.stdout.write(f"Search vectors built: {total}.")
