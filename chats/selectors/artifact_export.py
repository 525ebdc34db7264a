"""The artifact list as NDJSON: one line per artifact in scope, each the JSON the API gives for it."""

from __future__ import annotations

import json
from collections.abc import Iterator

from chats.selectors.artifacts import ArtifactFilters, iter_artifacts


def artifact_lines(filters: ArtifactFilters) -> Iterator[str]:
    for summary in iter_artifacts(filters):
        yield json.dumps(summary.as_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
