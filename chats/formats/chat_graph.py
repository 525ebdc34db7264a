"""What the ``chat_graph`` format's parser and exporter both know of its documents."""

from __future__ import annotations

# The key a wrapped graph comes under: {"chat_graph": {"conversation_id": ..., "nodes": [...]}, ...}. It stays in
# a wrapped graph's metadata, holding the graph's own other keys, so that the graph is exported wrapped again.
WRAPPER_KEY = "chat_graph"
