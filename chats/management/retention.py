"""The retention period of the prune commands (prune_read_audit, prune_receipt_payloads): `--days N`, else the
setting, where 0 keeps everything forever."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def retention_days(command: BaseCommand, given: int | None, *, setting: str, kept: str, verb: str) -> int | None:
    """How many days back to keep: `given` (`--days`), else the `setting`. None, said on the command's output, when
    the setting is 0: `kept` (what the command prunes, "Views") are kept forever, and there is nothing to `verb`."""
    days: int = getattr(settings, setting) if given is None else given
    if given is None and days == 0:
        command.stdout.write(
            f"{kept} are kept forever ({setting} is 0): nothing to do. Pass --days N to {verb} older ones anyway."
        )
        return None
    if days < 0:
        raise CommandError("--days cannot be negative")
    return days
