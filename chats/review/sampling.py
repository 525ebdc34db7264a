"""Which conversations a queue rule's sample takes: decided per conversation from a stable hash of the rule and the
conversation, so that running a rule again, at ingestion or over what is stored, takes the same ones.

The first 8 bytes of SHA-256 over ``"<rule id>:<conversation uuid>"``, read as an unsigned integer, are below
``rate * 2**64``: each conversation is taken with probability ``rate``, independently of the other rules.
"""

from __future__ import annotations

import hashlib
import uuid
from decimal import Decimal

_SPAN = 2**64


def rule_takes(rule_id: int, conversation_uuid: uuid.UUID, rate: Decimal) -> bool:
    """Whether the rule `rule_id` with sampling rate `rate` (0 < rate <= 1) takes this conversation."""
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"{rule_id}:{conversation_uuid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < Decimal(rate) * _SPAN
