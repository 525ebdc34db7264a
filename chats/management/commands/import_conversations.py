"""python manage.py import_conversations PATH... [--format NAME] [--source NAME]

Reads .json files (one document, or an array of documents), .jsonl/.ndjson files (one document per line), and
ChatGPT data exports (a folder or a .zip holding conversations.json and, optionally, message_feedback.json).
Keeps going past bad items, prints a summary, and exits non-zero when anything failed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from chats import ingest
from chats.ingest.files import DEFAULT_LIMITS, ArchiveLimits, iter_items
from chats.models import Outcome
from chats.services.audit import CommandActor
from chats.services.ingestion import conversation_ingest
from chats.services.sources import source_get_or_create


class Command(BaseCommand):
    help = "Import conversations from JSON, JSONL/NDJSON files and ChatGPT exports (folder or .zip)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--format", dest="format_name", choices=ingest.FORMATS, help="Skip detection.")
        parser.add_argument("--source", default="import", help="The source to import into (created if needed).")
        parser.add_argument("--no-progress", action="store_true", help="Hide the progress bar.")
        parser.add_argument(
            "--max-member-mb",
            type=int,
            default=DEFAULT_LIMITS.max_member_bytes // 2**20,
            help="Refuse a .zip whose conversations.json (uncompressed) is larger (default %(default)s).",
        )
        parser.add_argument(
            "--max-members",
            type=int,
            default=DEFAULT_LIMITS.max_members,
            help="Refuse a .zip with more members (default %(default)s).",
        )

    def handle(
        self,
        *args: object,
        paths: list[Path],
        format_name: str | None,
        source: str,
        no_progress: bool,
        max_member_mb: int,
        max_members: int,
        **options: object,
    ) -> None:
        limits = ArchiveLimits(max_members=max_members, max_member_bytes=max_member_mb * 2**20)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"No such file or folder: {', '.join(missing)}")
        actor = CommandActor("import_conversations")
        source_obj, _ = source_get_or_create(name=source, actor=actor)
        counts: Counter[str] = Counter()
        failures: list[str] = []
        items = (item for path in paths for item in iter_items(path, limits))
        for item in tqdm(items, desc="Importing", unit="conv", disable=no_progress, file=self.stderr):
            if item.error:
                counts[Outcome.REJECTED] += 1
                failures.append(f"{item.label}: {item.error}")
                continue
            result = conversation_ingest(
                source=source_obj,
                document=item.document,
                format=format_name,
                message_feedback=item.message_feedback,
                actor=actor,
            )
            counts[result.outcome] += 1
            if result.errors:
                failures.extend(f"{item.label}{e['path']}: {e['message']}" for e in result.errors)
        self.stdout.write(
            "Imported: {created} created, {updated} updated, {unchanged} unchanged, {rejected} failed.".format(
                **{outcome: counts[outcome] for outcome in Outcome.values}
            )
        )
        for failure in failures:
            self.stdout.write(f"  failed: {failure}")
        if counts[Outcome.REJECTED]:
            raise CommandError(f"{counts[Outcome.REJECTED]} item(s) failed.", returncode=1)
