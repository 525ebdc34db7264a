"""Serializer fields that read what a client sends through the project's one parser of each kind."""

from __future__ import annotations

from rest_framework import serializers

from chats.integers import parse_int


class IntegerSerializerField(serializers.IntegerField):
    """DRF's `IntegerField` read through `parse_int`: a JSON integer, or a string of ASCII digits (a query
    parameter), inside a bigint and the field's bounds. DRF's own accepts fullwidth digits and ``12.0``."""

    def to_internal_value(self, data: object) -> int:
        if isinstance(data, str) and len(data) > self.MAX_STRING_LENGTH:
            self.fail("max_string_length")
        number = parse_int(data)
        if number is None:
            self.fail("invalid")
        return number
