"""Path converters of the application's URLs."""

from __future__ import annotations


class ArtifactIdConverter:
    """An artifact id as given, of any length, slashes and line breaks included (a `path` converter stops at a line
    break: an id that holds one could be stored but not linked)."""

    regex = "(?s:.+)"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
