"""Which conversation a document belongs to (chats/ingest/identity.py), pure: the tie-break between stored id-less
conversations that share a message, and which documents of a batch must wait for another one."""

from __future__ import annotations

import uuid
from typing import Any

from chats import ingest
from chats.formats import canonical as c
from chats.ingest import identity
from chats.ingest.identity import IdlessMatch


def parse(history: list[dict[str, Any]]) -> c.Conversation:
    parsed = ingest.parse_document(history)
    identity.assign_content_keys(parsed)
    return parsed


def turns(*texts: str) -> list[dict[str, Any]]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(texts)]


def test_a_key_stored_as_a_leaf_wins_over_the_same_key_inside_an_earlier_conversation() -> None:
    key, other = uuid.uuid4(), uuid.uuid4()
    inner, leaf, later_inner = IdlessMatch(1, "gen-1", False), IdlessMatch(2, "gen-2", True), IdlessMatch(3, "g", False)

    found = identity.idless_matches([(key, inner), (other, inner), (key, leaf), (key, later_inner), (None, leaf)])

    assert found == {key: leaf, other: inner}


def test_a_document_matching_nothing_gets_an_id_from_its_leaf() -> None:
    parsed = parse(turns("hello", "hi"))

    assert identity.document_target(parsed, {}) == identity.generated_external_id(parsed)
    leaf = identity.leaf_message(parsed).content_key
    assert leaf is not None
    assert identity.document_target(parsed, {leaf: IdlessMatch(7, "gen-stored", True)}) == "gen-stored"


def test_in_a_batch_the_second_document_of_a_conversation_waits() -> None:
    short, longer, unrelated = parse(turns("a", "b")), parse(turns("a", "b", "c")), parse(turns("x"))
    same_start = parse(turns("a", "other answer"))

    conflicts = identity.batch_conflicts(
        [
            (short, "gen-short", True),
            (longer, "gen-longer", True),  # extends the first: waits for it
            (unrelated, "gen-x", True),
            (same_start, "gen-same-start", True),  # shares only an inner message: a chat of its own
            (parse(turns("y")), "named", False),
            (parse(turns("z")), "named", False),  # the same id again
        ]
    )

    assert conflicts == [False, True, False, False, False, True]
