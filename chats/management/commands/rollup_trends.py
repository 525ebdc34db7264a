"""python manage.py rollup_trends: rebuild the Trends page's daily rollups from the rows.

Ingestion and feedback keep the rollups right as they commit; run this once after migrating a database that holds
conversations, after loading rows by other means (COPY, a restore), or to repair a recomputation that a crash lost.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from chats.services.trend_rollups import trends_rollup_all


class Command(BaseCommand):
    help = "Rebuild the Trends rollups (per day and source) from the conversations."

    def handle(self, *args: object, **options: object) -> None:
        keys = trends_rollup_all()
        self.stdout.write(f"Trends rollups rebuilt: {keys} days of sources.")
