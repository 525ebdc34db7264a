"""A check constraint for a choices field, so that the database holds only the values its choices list."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def choices_check(name: str, field: str, choices: type[models.TextChoices]) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)
