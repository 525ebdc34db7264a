"""Form fields that read what a client types through the project's one parser of each kind."""

from __future__ import annotations

from django import forms

from chats.integers import parse_int


class IntegerFormField(forms.IntegerField):
    """Django's `forms.IntegerField` read through `parse_int`: ASCII digits inside a bigint, and inside the field's
    own bounds (``min_value``/``max_value``, checked by its validators as before). Django's own accepts fullwidth
    digits, ``"1_000"``, ``"12.0"`` and integers no column can hold."""

    default_error_messages = {"invalid": "Enter a whole number in ASCII digits."}

    def to_python(self, value: object) -> int | None:
        if value in self.empty_values:
            return None
        number = parse_int(value)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number
