"""What the model was given, and was it allowed: seed 001's Record QA document grown by one more turn, whose
injections the policy judges in every way (tests/api/test_policy_verdicts.py, the "Given to the model" panel, the
artifact pages and API): the protocol it injects is permitted (its kind is enabled and the context lists it), a record
is injected although records are not enabled, a discussion the context does not list is injected, and the context
lists a protocol that is never used. ``given_document`` adds what a producer states beside the messages."""

from __future__ import annotations

import copy
import json
from typing import Any

from rest_framework.test import APIClient

from tests.factories.documents import load_fixture

PERMITTED = "airalogy.id.lab.example.protocol.v.0.0.1"  # seed 001's (not well formed: no project)
NEVER_USED = "airalogy.id.protocol.6e8a0c2e-4f6b-4d8c-a0e2-3b5d7f9a1c3e.v.3"
DISABLED_RECORD = "airalogy.id.record.3f9c2a1e-7b4d-4c8a-9e2f-6a1b5c7d8e90.v.2"
LISTED_DISCUSSION = "airalogy.id.discussion.c2d4e6f8-1a3b-4c5d-9e7f-0a2b4c6d8e1f"
UNLISTED_DISCUSSION = "airalogy.id.discussion.0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"


def injection(call_id: str, tool: str, ids_key: str, artifact_id: str, items_key: str) -> list[dict[str, Any]]:
    arguments = json.dumps({ids_key: [artifact_id]})
    call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}
    item = {f"airalogy_{items_key[9:-1]}_id": artifact_id, "content": "…"}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({items_key: [item]})},
    ]


def document(*, records_enabled: bool = False, discussions: list[str] | None = None) -> dict[str, Any]:
    """Seed 001 with a second turn; `records_enabled` and `discussions` change its context."""
    seed = load_fixture("record_qa/seed_protocol_injection.json")
    grown: dict[str, Any] = copy.deepcopy(seed)
    grown["context"] = {
        "inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [PERMITTED, NEVER_USED]},
        "inject_airalogy_records": {"enabled": records_enabled, "airalogy_record_ids": [DISABLED_RECORD]},
        "inject_airalogy_discussions": {
            "enabled": True,
            "scope": "protocol",
            "airalogy_discussion_ids": discussions if discussions is not None else [LISTED_DISCUSSION],
        },
    }
    grown["main_messages"] += [
        {"role": "user", "content": "And what did the last run record, and what did people say about it?"},
        *injection("call_r", "inject_airalogy_records", "airalogy_record_ids", DISABLED_RECORD, "airalogy_records"),
        *injection(
            "call_d",
            "inject_airalogy_discussions",
            "airalogy_discussion_ids",
            UNLISTED_DISCUSSION,
            "airalogy_discussions",
        ),
        {"role": "assistant", "content": "The run recorded 42 ng/µL; the discussion suggests a longer elution."},
    ]
    return grown


def post(client: APIClient, url: str, body: Any) -> Any:
    response = client.post(url, data=json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 201), response.json()
    return response.json()


SYSTEM_PROMPT = "You are Masterbrain, a lab assistant. Answer from the injected protocols only."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "airalogy_search",
            "description": "Search protocols and records by keyword.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "inject_airalogy_protocols", "description": "Inject protocols."}},
]


def given_document(**changes: Any) -> dict[str, Any]:
    """The Done-when document, with what a producer states beside its messages: the model and its settings, the
    times, a scenario and its system message, the tools offered."""
    grown = document()
    grown.update(
        {
            "chat_id": "airalogy.id.chat.given-panel",
            "model": {"name": "qwen3.5-flash", "enable_thinking": True, "temperature": 0.2},
            "start_time": "2025-03-01T10:00:00Z",
            "end_time": "2025-03-01T10:05:30Z",
            "scenario": {"workflow": "record_qa", "lab": "example"},
            "scenario_messages": [{"role": "system", "content": SYSTEM_PROMPT}],
            "tools": TOOLS,
            "x_client": "lab-ui 2.3",
        }
    )
    grown.update(changes)
    return grown
