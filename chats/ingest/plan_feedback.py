"""The planner's feedback: the scores and comments that came with the data, against those stored. A pure function
over plain data (``chats.ingest.plans``), called by ``chats.ingest.planner``.
"""

from __future__ import annotations

from chats.formats import canonical as c
from chats.ingest.plans import FeedbackRow, Stored, StoredFeedback


def plan_feedback(
    parsed: c.Conversation, stored_conversation: Stored | None, ref_of: dict[str, int]
) -> tuple[list[FeedbackRow], list[tuple[int, c.Feedback]], list[StoredFeedback], tuple[int, int, int]]:
    """Feedback that came with the data: the producer's latest word wins, and a document that states an
    origin's feedback for its messages withdraws what it no longer states. `ref_of` maps the document's message
    keys to their refs. (new rows, (stored feedback, its new word), withdrawn, the change of (count, up, down))."""
    stored = {}
    if stored_conversation is not None:
        stored = {(f.message, f.origin): f for f in stored_conversation.feedback}
    latest: dict[tuple[int | None, str], c.Feedback] = {}
    for item in parsed.feedback:
        target = ref_of.get(item.message_key) if item.message_key else None
        if item.message_key and target is None:
            continue
        latest[(target, item.origin)] = item
    rows: list[FeedbackRow] = []
    updates: list[tuple[int, c.Feedback]] = []
    count = up = down = 0
    for (target, origin), item in latest.items():
        current = stored.get((target, origin)) if target is None or target >= 0 else None
        if current is None:
            rows.append(FeedbackRow(target, item))
            count += 1
            up += item.score == 1
            down += item.score == -1
        elif (current.score, current.comment, current.raw) != (item.score, item.comment or "", item.raw):
            updates.append((current.pk, item))
            up += (item.score == 1) - (current.score == 1)
            down += (item.score == -1) - (current.score == -1)
    withdrawn: list[StoredFeedback] = []
    if parsed.feedback_origins:
        covered = set(ref_of.values())
        for (target, origin), current in stored.items():
            if (
                origin in parsed.feedback_origins
                and target is not None
                and target in covered
                and (target, origin) not in latest
            ):
                withdrawn.append(current)
                count -= 1
                up -= current.score == 1
                down -= current.score == -1
    return rows, updates, withdrawn, (count, up, down)
