"""The conversation row the constraint tests of tests/models/ write their rows into."""

from __future__ import annotations

import pytest

from chats.models import Conversation, Source
from tests.factories.rows import conversation_row


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return conversation_row(source)
