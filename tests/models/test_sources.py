"""The identity and validity rules hold in the database itself, not only in the code that writes rows: API keys
(chats/models/sources.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from chats.models import ApiKey, Source
from tests.factories.rows import violates


def test_an_api_key_belongs_to_a_source_or_a_user_never_both(source: Source, reviewer: User) -> None:
    def key(suffix: str, **owner: Any) -> None:
        ApiKey.objects.create(prefix="abcdefgh", key_hash=ApiKey.hash_key(f"mb_{suffix}"), **owner)

    assert violates(lambda: key("both", source=source, user=reviewer))
    assert violates(lambda: key("neither"))
    assert not violates(lambda: key("source", source=source))
    assert not violates(lambda: key("user", user=reviewer))
