"""The API's JSON parser: strict JSON (`chats.jsonio.loads`), so that no body can make parsing fail with anything but
a 400.

DRF's own parser lets a ``RecursionError`` out of ``json.load`` (a body nested a few thousand levels deep): a 500.
`chats.jsonio.loads` turns it, and NaN, Infinity and numbers beyond a double's range, into a ``ValueError``, which
this parser answers as DRF's ``ParseError`` (400). What a body holds is checked by the services
(`chats.storable`), which name the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from chats import jsonio


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return jsonio.loads(stream.read().decode(encoding))
        except ValueError as exc:  # UnicodeDecodeError and every jsonio refusal are ValueErrors
            raise ParseError(f"JSON parse error - {exc}") from None
