"""Remove the payloads of receipts older than the retention period; the receipts stay (outcome, hash, size, errors).

Run it daily (cron, a systemd timer) once MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS is set; `--days N` overrides
the setting for one run (0: every receipt up to now). `--dry-run` counts what would go and changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.template.defaultfilters import filesizeformat

from chats.management.retention import retention_days
from chats.services.audit import CommandActor
from chats.services.receipts import receipt_payloads_prune


class Command(BaseCommand):
    help = "Remove the payloads of receipts older than the retention period (the receipts stay)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            help="Remove the payloads of receipts older than this many days (default: "
            "MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS; 0 with --days: every receipt).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Count what would be removed; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        days = retention_days(
            self,
            options["days"],
            setting="MASTERBRAIN_RECEIPT_PAYLOAD_RETENTION_DAYS",
            kept="Payloads",
            verb="remove",
        )
        if days is None:
            return
        result = receipt_payloads_prune(
            older_than_days=days, actor=CommandActor("prune_receipt_payloads"), dry_run=options["dry_run"]
        )
        verb = "Would remove" if options["dry_run"] else "Removed"
        self.stdout.write(
            f"{verb} the payloads of {result.receipts} receipt(s) created before {result.cutoff.isoformat()}: "
            f"{result.payloads} stored payload(s), {filesizeformat(result.stored_bytes)} on disk "
            f"({result.stored_bytes} bytes; {result.payload_bytes} bytes as received). The receipts stay."
        )
