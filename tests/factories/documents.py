"""The documents the tests read, named by a path relative to their format's folder ("openai/legacy_function_call.json").

Valid example documents ship with the application, in the demo package (``chats/demo/documents/<format>/``), where
``seed_demo`` loads them from too. Documents only the tests need stay in ``tests/fixtures/<format>/``: the malformed
ones (``<format>/malformed/``) and a ChatGPT export's ``message_feedback.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chats.demo import DOCUMENTS, example_documents

TESTS_ONLY = Path(__file__).resolve().parents[1] / "fixtures"
ROOTS = (DOCUMENTS, TESTS_ONLY)


def fixture_path(relative: str) -> Path:
    """Where the document named ``relative`` is, whichever of the two folders holds it."""
    for root in ROOTS:
        if (root / relative).is_file():
            return root / relative
    raise FileNotFoundError(f"no fixture document {relative!r} under {' or '.join(str(root) for root in ROOTS)}")


def load_fixture(relative: str) -> Any:
    """A fixture document, decoded: ``load_fixture("openai/legacy_function_call.json")``."""
    return json.loads(fixture_path(relative).read_text(encoding="utf-8"))


def fixture_name(path: Path) -> str:
    """The name ``fixture_path`` takes for a path under either folder: "openai/malformed/empty_list.json"."""
    for root in ROOTS:
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    raise ValueError(f"{path} is not a fixture document")


def valid_documents(format: str | None = None) -> list[Path]:
    """Every valid example document (of ``format`` when one is named)."""
    return example_documents(format)


def malformed_documents(format: str | None = None) -> list[Path]:
    """Every malformed document (of ``format`` when one is named): each breaks a rule of its format."""
    return sorted(TESTS_ONLY.glob(f"{format or '*'}/malformed/*.json"))
