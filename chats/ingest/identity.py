"""Which conversation a document belongs to, by its content (design notes §3): every message gets a content key
(a digest of what it says, chained through its parent), a document without an id is placed by them, and one that
matches nothing gets an id made from its leaf's key; in a batch, a document another one before it takes the
conversation of waits for it (`batch_conflicts`). Pure: the stored matches are looked up by the caller."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chats.formats import canonical as c


def assign_content_keys(parsed: c.Conversation) -> None:
    """Give every message its content key (the linear parsers set them already; trees get them here)."""
    by_key: dict[str, c.Message] = {}
    for message in parsed.messages:
        if message.content_key is None:
            parent = by_key.get(message.parent_key) if message.parent_key is not None else None
            message.content_key = c.content_key(parent.content_key if parent is not None else None, message)
        by_key[message.key] = message


def leaf_message(parsed: c.Conversation) -> c.Message:
    """The document's own active leaf: the message it names, else its last one."""
    if parsed.active_leaf_key is not None:
        for message in parsed.messages:
            if message.key == parsed.active_leaf_key:
                return message
    return parsed.messages[-1]


def generated_external_id(parsed: c.Conversation) -> str:
    """The id the server gives a conversation whose document has none: from the content of its leaf, so that the
    same document sent twice at once makes one conversation (the second finds the first's id taken)."""
    key = leaf_message(parsed).content_key
    assert key is not None, "assign_content_keys first"
    return "gen-" + key.hex


@dataclass(frozen=True, slots=True)
class IdlessMatch:
    """A stored message of an id-less conversation of the same source with one of the document's content keys."""

    conversation: int
    external_id: str
    is_leaf: bool


def idless_target(parsed: c.Conversation, found: dict[uuid.UUID, IdlessMatch]) -> IdlessMatch | None:
    """The stored id-less conversation a document without an id belongs to, or None for a new one.

    Its leaf already stored: that conversation (a repeat or a prefix). Else the longest path of it that ends at a
    stored leaf: the conversation it extends. A match on an inner message only is not enough (two chats that open
    with the same question are two chats).
    """
    leaf = leaf_message(parsed)
    if leaf.content_key in found:
        return found[leaf.content_key]
    best: IdlessMatch | None = None
    best_depth = -1
    depth: dict[str, int] = {}
    for message in parsed.messages:
        level = depth[message.key] = depth.get(message.parent_key, -1) + 1 if message.parent_key else 0
        match = found.get(message.content_key) if message.content_key is not None else None
        if match is not None and match.is_leaf and level > best_depth:
            best, best_depth = match, level
    return best


def idless_matches(rows: Iterable[tuple[uuid.UUID | None, IdlessMatch]]) -> dict[uuid.UUID, IdlessMatch]:
    """The stored match of each content key, from (content key, match) rows in the order of their conversations:
    the first conversation's, unless a later one holds the key as its leaf and the first does not (the chat a
    document extends is the one that ends where it goes on)."""
    found: dict[uuid.UUID, IdlessMatch] = {}
    for key, match in rows:
        if key is not None and (key not in found or (match.is_leaf and not found[key].is_leaf)):
            found[key] = match
    return found


def document_target(parsed: c.Conversation, found: dict[uuid.UUID, IdlessMatch]) -> str:
    """The external id of the conversation a document without an id belongs to: the stored one it matches, else
    one made from its content (`generated_external_id`)."""
    target = idless_target(parsed, found)
    return target.external_id if target is not None else generated_external_id(parsed)


def batch_conflicts(documents: Sequence[tuple[c.Conversation, str, bool]]) -> list[bool]:
    """For each document of a batch, in order, as (parsed, external id, whether the server made the id up): whether
    it must wait until those before it are stored, because one of them already takes its conversation: the same
    id, or, for documents without an id, one whose content it extends or that extends it (the first one stored
    decides where the other goes)."""
    conflicts = []
    taken_ids: set[str] = set()
    taken_keys: set[uuid.UUID | None] = set()  # content keys of the id-less documents taken
    taken_leaves: set[uuid.UUID | None] = set()  # and of their leaves
    for parsed, external_id, generated in documents:
        keys: set[uuid.UUID | None] = set()
        leaf: uuid.UUID | None = None
        if generated:
            keys = {message.content_key for message in parsed.messages}
            leaf = leaf_message(parsed).content_key
        conflict = external_id in taken_ids or leaf in taken_keys or not keys.isdisjoint(taken_leaves)
        conflicts.append(conflict)
        if conflict:
            continue
        taken_ids.add(external_id)
        if generated:
            taken_keys |= keys
            taken_leaves.add(leaf)
    return conflicts
