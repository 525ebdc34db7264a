import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load_fixture(relative_path: str) -> Any:
    """A fixture document, decoded: ``load_fixture("openai/legacy_function_call.json")``."""
    return json.loads((FIXTURES / relative_path).read_text(encoding="utf-8"))
