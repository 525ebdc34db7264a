"""Which conversation a document belongs to, by its content (design notes §3): every message gets a content key
(a digest of what it says, chained through its parent), a document without an id is placed by them, and one that
matches nothing gets an id made from its leaf's key. Pure: the stored matches are looked up by the caller."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from chats.ingest import canonical as c


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
