"""Walk the audit log's hash chain and report the first event where it breaks, with a non-zero exit status.

Run it on a schedule (cron, a systemd timer). Each run is recorded as an "audit.verified" event (the audit pages
show the last one). It prints the hash of the last intact event: kept somewhere else, it tells later whether the
chain up to there was rewritten as a whole, which no check inside the database can.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from chats.services.audit import CommandActor, audit_chain_verify


class Command(BaseCommand):
    help = "Verify the audit log's hash chain; exit 1 naming the first event where it breaks."

    def handle(self, *args: Any, **options: Any) -> None:
        check = audit_chain_verify(actor=CommandActor("verify_audit"))
        if not check.ok:
            raise CommandError(
                f"The audit chain breaks at event {check.broken_id}: {check.problem}. "
                f"{check.events_checked} event(s) before it are intact."
            )
        if check.last_id is None:
            self.stdout.write("The audit log is empty: nothing to verify.")
            return
        self.stdout.write(
            f"The audit chain is intact: {check.events_checked} event(s), up to event {check.last_id} "
            f"with hash {check.last_hash}."
        )
