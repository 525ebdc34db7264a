"""Deprecated: the old name of `prune_read_audit`, kept for one release. It warns on stderr and runs
`prune_read_audit` with the same arguments."""

from __future__ import annotations

from chats.management.commands.prune_read_audit import Command as PruneReadAudit


class Command(PruneReadAudit):
    help = "Deprecated: use prune_read_audit. " + PruneReadAudit.help

    def handle(self, *args: object, **options: object) -> None:
        self.stderr.write(
            "Warning: prune_view_events is deprecated and will be removed in the next release; "
            "run prune_read_audit instead."
        )
        super().handle(*args, **options)
