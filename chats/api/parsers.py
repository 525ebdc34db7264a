"""The API's one JSON parser: DRF's, reading with `chats.strict_json.loads`.

Python's `json` (which DRF's parser calls) recurses once per nesting level, so a body of 5,000 `[` raised
RecursionError, a 500, on every endpoint that takes JSON; it also accepts NaN, Infinity and numbers beyond a double,
which no JSON column keeps. `chats.strict_json.loads` refuses all of them, and a refusal here is a 400 like any other
malformed body. (Ingest reads its bodies itself, with the same function.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from chats import strict_json


class StrictJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = stream.read()
            return strict_json.loads(data.decode(encoding) if isinstance(data, bytes) else data)
        except (ValueError, UnicodeError) as error:  # JSON and strictness errors are ValueErrors
            raise ParseError(f"JSON parse error - {error}") from None
