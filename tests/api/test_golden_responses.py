"""The API's answers for one fixed conversation, compared with the files in tests/golden/.

The conversation is the demo's chat graph with tool calls, injections and a branch
(``chat_graph/tool_calls_and_injections.json``), ingested, with a reviewer's feedback on its last answer (a label
and a correction) and on the whole conversation. Each test reads one answer: the conversation's
detail (the active path, and every branch), its export in every format, the bulk export with envelopes and the
training JSONL.

What the server makes up is replaced before the comparison, so that the files hold only what a change of code can
change: its uuids (``<conversation 1>``, ``<feedback 2>``, ...) and the times it stamps (``<now>``, as a date or
as seconds since the epoch); times that come from the document stay.

``UPDATE_GOLDEN=1`` writes the files from the answers instead; otherwise a difference fails with a diff.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, Feedback, IngestionReceipt, Label, Message, Source
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
DOCUMENT = "chat_graph/tool_calls_and_injections.json"
EXPORT_FORMATS = ("openai", "chat_document", "record_qa", "chat_history", "chat_graph", "chatgpt_export", "openwebui")
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")
# Stamped by the server during the test, or within this margin of it.
CLOCK_MARGIN = timedelta(minutes=5)


class Normaliser:
    """Replaces the values the server makes up: the uuids it gave, and the times of its own clock."""

    def __init__(self, since: datetime) -> None:
        self.since = since - CLOCK_MARGIN
        self.until = datetime.now(UTC) + CLOCK_MARGIN
        self.names: dict[str, str] = {}
        for kind, model in (("conversation", Conversation), ("feedback", Feedback), ("receipt", IngestionReceipt)):
            for number, uuid in enumerate(model.objects.order_by("pk").values_list("uuid", flat=True), start=1):
                self.names[str(uuid)] = f"<{kind} {number}>"

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self(key): self(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return "<now>" if self.since.timestamp() <= value <= self.until.timestamp() else value
        return value

    def _text(self, text: str) -> str:
        if DATETIME.match(text):
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                pass
            else:
                if moment.tzinfo is not None and self.since <= moment <= self.until:
                    return "<now>"
        for uuid, name in self.names.items():
            text = text.replace(uuid, name)
        return text


def assert_matches_golden(name: str, actual: Any) -> None:
    """``actual`` equals tests/golden/<name>.json; with UPDATE_GOLDEN=1, it is written there instead."""
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path} does not exist: run the test with UPDATE_GOLDEN=1 to write it")
    expected = json.loads(path.read_text(encoding="utf-8"))
    if actual != expected:
        diff = difflib.unified_diff(
            json.dumps(expected, indent=2, ensure_ascii=False, sort_keys=True).splitlines(),
            json.dumps(actual, indent=2, ensure_ascii=False, sort_keys=True).splitlines(),
            f"tests/golden/{name}.json",
            "the answer",
            lineterm="",
        )
        pytest.fail(
            f"The answer differs from tests/golden/{name}.json (keys sorted; UPDATE_GOLDEN=1 rewrites the file "
            "when the change is intended):\n" + "\n".join(diff),
            pytrace=False,
        )


@pytest.fixture
def golden(source: Source, reviewer: User) -> tuple[Client, str, Normaliser]:
    """A reviewer's client, the conversation's uuid, and the normaliser of what the server made up."""
    started = datetime.now(UTC)
    conversation = conversation_ingest(source=source, document=load_fixture(DOCUMENT)).conversation
    assert conversation is not None
    hallucination = Label.objects.create(name="hallucination", description="Not supported by the injected artifacts.")
    helpful = Label.objects.create(name="helpful", description="The answer solved the user's problem.")
    feedback_submit(
        author=reviewer,
        conversation=conversation,
        message=Message.objects.get(conversation=conversation, key="node-11"),
        score=-1,
        labels=[hallucination],
        comment="The efficiency is not 80% at this slope.",
        correction="A slope of -3.92 means about 80% efficiency; remake the dilution series.",
    )
    feedback_submit(
        author=reviewer, conversation=conversation, score=1, labels=[helpful], comment="Grounded in the record."
    )
    client = Client()
    client.force_login(reviewer)
    return client, str(conversation.uuid), Normaliser(started)


@pytest.mark.parametrize("branch", ["active", "all"])
def test_the_conversation_detail_matches_its_golden_file(golden: tuple[Client, str, Normaliser], branch: str) -> None:
    client, uuid, normalise = golden
    suffix = "" if branch == "active" else "?branch=all"

    response = client.get(f"/api/v1/conversations/{uuid}/{suffix}")

    assert response.status_code == 200
    name = "conversation_detail" if branch == "active" else "conversation_detail_all_branches"
    assert_matches_golden(name, normalise(response.json()))


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_the_export_in_each_format_matches_its_golden_file(golden: tuple[Client, str, Normaliser], format: str) -> None:
    client, uuid, normalise = golden

    response = client.get(f"/api/v1/conversations/{uuid}/export/?format={format}")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    answer = {"omitted": json.loads(response["X-Export-Omitted"]), "document": response.json()}
    assert_matches_golden(f"export_{format}", normalise(answer))


# Golden file: the query of /api/v1/export/ (NDJSON, or the training JSONL: compared line by line, decoded).
BULK_EXPORTS = {
    "bulk_export_chat_document_envelope": "format=chat_document&envelope=true",
    "training": "format=training",
}


@pytest.mark.parametrize("name", list(BULK_EXPORTS))
def test_the_bulk_exports_match_their_golden_files(golden: tuple[Client, str, Normaliser], name: str) -> None:
    client, _, normalise = golden

    response = client.get(f"/api/v1/export/?{BULK_EXPORTS[name]}")

    assert response.status_code == 200
    lines = [json.loads(line) for line in response.getvalue().decode().splitlines()]
    assert_matches_golden(name, {"content_type": response["Content-Type"], "lines": normalise(lines)})
