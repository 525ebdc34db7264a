"""What a review judged: a path of a conversation's message tree, named by its last message (the leaf) and a
content hash of the whole path. Pure functions, no ORM: they take stored rows or canonical messages alike.

The path hash is the one definition every pin uses (leases, reviews, resolutions, dataset items):

    SHA-256 over the UTF-8 of the compact JSON list `[[key, content_key], ...]` of the path's messages, from the
    root to the leaf, where `key` is the message's key and `content_key` the hex of its content key (a digest of
    its own content and its parent's content key, `chats.formats.canonical.content_key`), or null for a message
    stored without one.

Two paths with the same messages in the same order have the same hash; a path that grew, or another branch, has
another. A message's key alone already names its path in a conversation (its ancestors are fixed), so comparing
leaves tells whether a conversation moved on since a review; the hash is what a copy of the path is checked by.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol


class PathMessage(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def content_key(self) -> uuid.UUID | None: ...


def path_sha256(path: Iterable[PathMessage]) -> str:
    """The hex SHA-256 of a path given root first (the module's definition)."""
    entries = [[m.key, m.content_key.hex if m.content_key is not None else None] for m in path]
    text = json.dumps(entries, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class TreeMessage(PathMessage, Protocol):
    @property
    def parent_key(self) -> str | None: ...


def path_to[M: TreeMessage](messages: Sequence[M], leaf_key: str) -> list[M]:
    """The messages from the root to `leaf_key`, following parents (empty when no message has that key). A parent
    that is missing ends the path there, as a root would."""
    by_key = {message.key: message for message in messages}
    path: list[M] = []
    current = by_key.get(leaf_key)
    seen: set[str] = set()
    while current is not None and current.key not in seen:
        seen.add(current.key)
        path.append(current)
        current = by_key.get(current.parent_key) if current.parent_key is not None else None
    path.reverse()
    return path
