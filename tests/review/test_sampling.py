"""A queue rule's sample (chats/review/sampling.py): one stable hash of the rule and the conversation, so that a
conversation is taken or not, the same way every time it is looked at."""

from __future__ import annotations

from decimal import Decimal

from chats.models import Conversation
from chats.review.sampling import rule_takes


def test_the_sample_is_a_stable_hash_of_the_rule_and_the_conversation() -> None:
    conversation = Conversation(external_id="x")
    assert rule_takes(7, conversation.uuid, Decimal("0.5")) == rule_takes(7, conversation.uuid, Decimal("0.5"))
    assert rule_takes(7, conversation.uuid, Decimal(1))
    taken = [rule_takes(7, Conversation().uuid, Decimal("0.2")) for _ in range(2000)]
    assert 0.15 * 2000 < sum(taken) < 0.25 * 2000
