"""Demo data: the conversations ``seed_demo`` loads and the benchmarks send.

- ``generator``: deterministic, realistic conversation documents in every input format (the same seed gives the
  same documents, byte for byte);
- ``documents/<format>/*.json``: hand-written example documents, one or more per input format, each valid in its
  format (a ChatGPT ``conversations.json`` holds several conversations). They ship with the package.
"""

from __future__ import annotations

from pathlib import Path

DOCUMENTS = Path(__file__).resolve().parent / "documents"


def example_documents(format: str | None = None) -> list[Path]:
    """The example documents, sorted by format and name; only those of ``format`` when one is named."""
    return sorted(DOCUMENTS.glob(f"{format or '*'}/*.json"))
