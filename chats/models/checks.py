"""A check constraint for a choices field, so that the database holds only the values its choices list."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def choices_check(
    name: str, field: str, choices: type[models.TextChoices], *, null: bool = False
) -> models.CheckConstraint:
    """``null``: the field may also be NULL (spelled out, so that validating in Python agrees with the database)."""
    condition = Q(**{f"{field}__in": choices.values})
    if null:
        condition |= Q(**{f"{field}__isnull": True})
    return models.CheckConstraint(condition=condition, name=name)
