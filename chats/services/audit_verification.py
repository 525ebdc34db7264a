"""The audit chain walked and checked (the verify_audit command): every event's hash, the link to the event before
it, and every checkpoint of a head once found intact.

A chain cannot tell that it was cut short, emptied and begun again, or rewritten and re-hashed as a whole: each is a
chain too. So the heads the walk finds intact are kept as checkpoints (AuditCheckpoint: event count and hash), in a
table the chain cannot rewrite (append-only and never truncated on PostgreSQL, migration 0024, like the log itself),
and printed for an operator to keep outside the database. Every walk checks the chain against each of them, and
against the heads an operator gives back (`verify_audit --expect`): the chain's event number N still has the hash
recorded for N.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC

from django.db import router, transaction

from chats.audit_actions import AuditAction
from chats.models import AUDIT_GENESIS_HASH, AuditCheckpoint, AuditEvent
from chats.services.audit import Actor, audit_record
from chats.services.audit_chain import CHAIN_CHUNK, CHAIN_FIELDS, audit_chain_digest


@dataclass(frozen=True)
class ChainMark:
    """A head of the chain known to be intact once: event number `events` (counted from the start of the chain) had
    hash `head_hash`. A stored AuditCheckpoint, or one an operator kept outside the database (`verify_audit
    --expect`); `origin` names it in a failure."""

    events: int
    head_hash: str
    origin: str


@dataclass(frozen=True)
class ChainCheck:
    """The outcome of a walk along the chain: how many events were intact, up to which, and the first problem.

    A break inside the chain names the first event that does not fit (`broken_id`), and the events before it are
    intact. A chain that disagrees with a checkpoint (cut short, emptied, or rewritten and re-hashed as a whole)
    is known intact only up to the last checkpoint it agreed with; `broken_id` is then the event that disagrees,
    or None when the log ends before the checkpoint's count."""

    events_checked: int  # the intact events: before the first break, or up to the last checkpoint agreed with
    last_id: int | None  # the last intact event
    last_hash: str
    broken_id: int | None = None
    problem: str = ""
    checkpoints_matched: int = 0  # the checkpoints and expected heads the chain agreed with
    disagrees_with: str = ""  # the checkpoint or expected head the chain does not agree with, when one

    @property
    def ok(self) -> bool:
        return self.broken_id is None and not self.problem


def _stored_marks() -> Iterator[ChainMark]:
    """Every stored checkpoint, in chain order (by its count), read a chunk at a time."""
    rows = AuditCheckpoint.objects.order_by("events", "id").values_list("id", "events", "head_hash", "created_at")
    for pk, events, head_hash, created_at in rows.iterator(chunk_size=CHAIN_CHUNK):
        yield ChainMark(
            events, head_hash, f"checkpoint {pk} (recorded {created_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC)"
        )


def audit_chain_check(*, expected: Iterable[ChainMark] = ()) -> ChainCheck:
    """Walk the chain in id order and stop at the first event whose hash is not the hash of its content, or which
    does not follow the event before it; and check it against every stored checkpoint and every `expected` head:
    the chain's event number `events` has that hash, so the chain up to it is the one the checkpoint saw.

    One pass over the events and one over the checkpoints, side by side (both in chain order): a constant amount
    of memory however long either is, beyond the `expected` heads given."""
    marks = heapq.merge(_stored_marks(), sorted(expected, key=lambda mark: mark.events), key=lambda m: m.events)
    mark = next(marks, None)
    expected_hash, last_id, checked, matched = AUDIT_GENESIS_HASH, None, 0, 0
    agreed: tuple[int, int | None, str] = (0, None, AUDIT_GENESIS_HASH)  # the last checkpoint the chain agreed with
    rows = AuditEvent.objects.order_by("id").values_list(*CHAIN_FIELDS, "prev_hash", "event_hash")
    for row in rows.iterator(chunk_size=CHAIN_CHUNK):
        fields = dict(zip(CHAIN_FIELDS, row, strict=False))
        pk, prev_hash, event_hash = fields["id"], row[-2], row[-1]
        if audit_chain_digest(fields, prev_hash) != event_hash:
            problem = f"event {pk} does not match its hash: it was changed after it was written"
            if not event_hash:
                problem = f"event {pk} has no hash: it was written around the audit service"
            return ChainCheck(checked, last_id, expected_hash, pk, problem, matched)
        if prev_hash != expected_hash:
            after = f"event {last_id}" if last_id is not None else "the start of the chain"
            problem = (
                f"event {pk} does not follow {after}: an event before it was removed, or {after} was rewritten "
                "with a new hash"
            )
            return ChainCheck(checked, last_id, expected_hash, pk, problem, matched)
        expected_hash, last_id, checked = event_hash, pk, checked + 1
        while mark is not None and mark.events == checked:
            if mark.head_hash != event_hash:
                problem = (
                    f"event {pk}, number {checked} of the chain, has hash {event_hash}, but {mark.origin} recorded "
                    f"{mark.head_hash} there: the chain up to it was rewritten (or replaced) since"
                )
                return ChainCheck(*agreed, pk, problem, matched, mark.origin)
            agreed, matched, mark = (checked, pk, event_hash), matched + 1, next(marks, None)
    if mark is not None:
        problem = (
            f"the log holds {checked} event(s), but {mark.origin} counted {mark.events}, the last with hash "
            f"{mark.head_hash}: events were removed from its end, or it was emptied and begun again"
        )
        return ChainCheck(*agreed, None, problem, matched, mark.origin)
    return ChainCheck(checked, last_id, expected_hash, checkpoints_matched=matched)


def audit_chain_verify(
    *, actor: Actor, expected: Iterable[ChainMark] = (), checkpoint: bool = True
) -> tuple[ChainCheck, AuditCheckpoint | None]:
    """Walk the chain (`audit_chain_check`, against the stored checkpoints and the `expected` heads) and record the
    outcome, intact or not, as an event of its own. When the chain is intact and holds events, and `checkpoint`,
    its head as walked becomes a new checkpoint (returned): the next walk checks it, and an operator keeps it
    outside the database (`<events>:<head_hash>`) for `verify_audit --expect`.

    The checkpoint is the head the walk verified, not the event recording the walk (which follows it, with any
    event written meanwhile): the next walk verifies those."""
    check = audit_chain_check(expected=expected)
    with transaction.atomic(using=router.db_for_write(AuditCheckpoint)):
        audit_record(
            actor=actor,
            action=AuditAction.AUDIT_VERIFIED,
            target_type="audit_chain",
            target_id="all",
            after={
                "ok": check.ok,
                "events_checked": check.events_checked,
                "last_id": check.last_id,
                "last_hash": check.last_hash,
                "broken_id": check.broken_id,
                "problem": check.problem,
            },
        )
        if not (checkpoint and check.ok and check.last_id is not None):
            return check, None
        recorded = AuditCheckpoint.objects.create(
            events=check.events_checked,
            last_event_id=check.last_id,
            head_hash=check.last_hash,
            recorded_by=actor.get_username()[:150] if actor is not None else "",
        )
    return check, recorded
