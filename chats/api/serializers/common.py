"""What every resource's serializers share: the serializer of a selector's wrapper of a model instance, and the
documented shape of an error."""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework import serializers


class WrapperSerializer(serializers.Serializer[Any]):
    # Serializes a selector's dataclass that wraps a model instance (the attribute `wraps` names): every field but
    # `own_fields` is read from that instance, so a model's fields are declared once, for both shapes. The fields
    # read the model directly (not through a dotted source): a thread's thousands of messages pay no extra lookup.
    # A comment, not a docstring: the schema would describe every subclass with it.

    wraps: ClassVar[str] = ""
    own_fields: ClassVar[frozenset[str]] = frozenset()

    def to_representation(self, instance: object) -> dict[str, Any]:
        wrapped = getattr(instance, self.wraps)
        data: dict[str, Any] = {}
        for field in self._readable_fields:
            name = str(field.field_name)
            attribute = field.get_attribute(instance if name in self.own_fields else wrapped)
            data[name] = None if attribute is None else field.to_representation(attribute)
        return data


class IssueSerializer(serializers.Serializer[Any]):
    path = serializers.CharField(help_text="A JSON pointer into the document ('' for the whole document).")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer[Any]):
    errors = IssueSerializer(many=True)  # type: ignore[assignment]  # a field named like Serializer.errors
