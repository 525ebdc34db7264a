"""Walk the audit log's hash chain and report the first event where it breaks, with a non-zero exit status.

Run it on a schedule (cron, a systemd timer). Each run is recorded as an "audit.verified" event (the audit pages
show the last one). The chain is also checked against every checkpoint stored by earlier runs, and against the
heads given with `--expect <events>:<hash>`: a log cut short, emptied and begun again, or rewritten and re-hashed
as a whole, fails there. An intact run stores its head as a new checkpoint (unless `--no-checkpoint`) and prints
it as `<events>:<hash>`: kept somewhere else (a ticket, a log shipped off the machine), given back later with
`--expect`, it finds even a rewrite that also replaced the stored checkpoints, which no check inside the database
can.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chats.integers import parse_int
from chats.services.audit import CommandActor
from chats.services.audit_verification import ChainMark, audit_chain_verify

_MARK = re.compile(r"(?P<events>[0-9]{1,19}):(?P<hash>[0-9a-f]{64})\Z")


def _expected_head(text: str) -> ChainMark:
    found = _MARK.match(text.strip().lower())
    events = parse_int(found["events"], minimum=1, maximum=2**63 - 1) if found else None
    if found is None or events is None:
        raise CommandError(
            f"--expect {text!r}: give a head verify_audit printed, <events>:<hash> (a count of at least 1, a colon, "
            "and 64 hexadecimal digits)"
        )
    return ChainMark(events, found["hash"], f"the expected head {events}:{found['hash'][:12]}…")


class Command(BaseCommand):
    help = (
        "Verify the audit log's hash chain, against the stored checkpoints and the heads given with --expect; "
        "exit 1 naming where it breaks. An intact chain's head is stored as a checkpoint and printed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--expect",
            action="append",
            default=[],
            metavar="EVENTS:HASH",
            help="a head printed by an earlier run and kept outside the database; may be given more than once",
        )
        parser.add_argument(
            "--no-checkpoint",
            action="store_true",
            help="verify only: do not store the head as a checkpoint",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        expected = [_expected_head(text) for text in options["expect"]]
        check, checkpoint = audit_chain_verify(
            actor=CommandActor("verify_audit"), expected=expected, checkpoint=not options["no_checkpoint"]
        )
        if not check.ok:
            where = f"breaks at event {check.broken_id}" if check.broken_id is not None else "is cut short"
            intact = f"{check.events_checked} event(s) before it are intact."
            if check.disagrees_with:
                intact = (
                    f"Known intact: the first {check.events_checked} event(s), up to the last checkpoint it agrees "
                    "with."
                )
            raise CommandError(f"The audit chain {where}: {check.problem}. {intact}")
        if check.last_id is None:
            self.stdout.write("The audit log is empty: nothing to verify, and no checkpoint says it held events.")
            return
        matched = f" It agrees with {check.checkpoints_matched} checkpoint(s)." if check.checkpoints_matched else ""
        self.stdout.write(
            f"The audit chain is intact: {check.events_checked} event(s), up to event {check.last_id} "
            f"with hash {check.last_hash}.{matched}"
        )
        if checkpoint is not None:
            self.stdout.write(
                f"Checkpoint {checkpoint.pk} stored. Keep this head outside the database, and check a later log "
                f"against it with verify_audit --expect {checkpoint.events}:{checkpoint.head_hash}"
            )
