"""The types of JSON values as the parsers and payload builders see them: what a strict decoder returns.

``JSON`` is recursive and exact, for values built here; a parser reading a client's document takes ``object`` and
narrows it with ``isinstance`` (a client may send anything), then hands on the narrowed value. Parameters that only
read take ``JSONMapping`` or ``JSONSequence``, which accept any dict or list of JSON (``dict`` and ``list`` are
invariant in their items, so a ``dict[str, str]`` is not a ``JSONObject``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

type JSONScalar = str | int | float | bool | None
type JSON = JSONScalar | JSONObject | JSONArray
type JSONObject = dict[str, JSON]
type JSONArray = list[JSON]
type JSONMapping = Mapping[str, JSON]
type JSONSequence = Sequence[JSON]
