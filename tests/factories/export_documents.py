"""Real-shaped input documents, one or two per format, written from the seeds and formats.md.

The round-trip tests run on these and on the example documents of the demo package (chats/demo/documents/), so
the exporters are exercised on tool calls, injections, feedback, branches and hidden messages even where the
examples happen not to have them.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL_ID = "airalogy.id.lab.example.project.demo.protocol.pcr_setup.v.0.0.1"
RECORD_ID = "airalogy.id.record.5f0c2c4e-9a43-4a53-8d4b-2f1e0c6a7b11.v.2"

_PROTOCOL_RESULT = json.dumps(
    {"airalogy_protocols": [{"airalogy_protocol_id": PROTOCOL_ID, "markdown": "# PCR setup", "field_json_schema": {}}]}
)
_RECORD_RESULT = json.dumps(
    {
        "airalogy_records": [
            {"airalogy_record_id": RECORD_ID, "metadata": {}, "data": {"var": {}, "step": {}, "check": {}}}
        ]
    }
)

OPENAI = [
    {"role": "system", "content": "You are Airalogy Masterbrain."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": "https://example.com/gel.png"},
        ],
    },
    {"role": "assistant", "content": "<think>Look at the bands.</think>A gel with two bands."},
    {"role": "user", "content": "Why are there nonspecific PCR bands?", "message_id": "u-2"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Search and check the protocol.",
        "tool_calls": [
            {
                "id": "call_search",
                "type": "function",
                "function": {
                    "name": "airalogy_search",
                    "arguments": '{"keywords":["PCR","nonspecific bands"]}',
                },
            },
            {
                "id": "call_inject",
                "type": "function",
                "function": {
                    "name": "inject_airalogy_protocols",
                    "arguments": json.dumps({"airalogy_protocol_ids": [PROTOCOL_ID]}),
                },
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_inject", "content": _PROTOCOL_RESULT},
    {"role": "tool", "tool_call_id": "call_search", "content": '{"search_result":"primer dimers"}'},
    {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{not json"}},
    {"role": "function", "name": "lookup", "content": "no match"},
    {"role": "assistant", "content": "Possible causes include contamination or primer dimer formation."},
]

CHAT_DOCUMENT = {
    "chat_id": "airalogy.id.chat.7d6f5e4c-3b2a-4190-8e7d-6c5b4a392817",
    "user_id": "airalogy.id.user.42",
    "title": "PCR troubleshooting",
    "start_time": "2025-03-01T08:00:00+00:00",
    "end_time": "2025-03-01T08:05:30+00:00",
    "active": True,
    "deleted": False,
    "model": {"name": "qwen3.5-flash", "enable_thinking": True},
    "system_message_name": "record_qa",
    "function_names": ["inject_airalogy_records"],
    "scenario": {"workflow": "record_qa", "lab": "example"},
    "scenario_messages": [{"role": "system", "content": "Answer from the injected records."}],
    "main_messages": [
        {"role": "user", "content": "Summarise my last record."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_rec",
                    "type": "function",
                    "function": {
                        "name": "inject_airalogy_records",
                        "arguments": json.dumps({"airalogy_record_ids": [RECORD_ID]}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_rec", "content": _RECORD_RESULT},
        {"role": "assistant", "content": "The record has no variables filled in yet."},
    ],
    "human_feedback": [
        {"score": 0, "additional": ""},
        {"score": 0, "additional": ""},
        {"score": 0, "additional": ""},
        {"score": 1, "additional": "accurate"},
    ],
}

CHAT_DOCUMENT_HISTORY = {
    "chat_id": "airalogy.id.chat.0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9",
    "user_id": "u-7",
    "model": "qwen-max",
    "history": [
        {"role": "user", "content": "Who are you?"},
        {"role": "assistant", "content": "I am Airalogy Masterbrain."},
    ],
    "scenario": None,
}

RECORD_QA = {
    "context": {
        "inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [PROTOCOL_ID]},
        "inject_airalogy_records": {"enabled": False, "airalogy_record_ids": []},
    },
    "main_messages": [
        {"role": "user", "content": "Explain this protocol."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_abc123",
                    "type": "function",
                    "function": {
                        "name": "inject_airalogy_protocols",
                        "arguments": json.dumps({"airalogy_protocol_ids": [PROTOCOL_ID]}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc123", "content": _PROTOCOL_RESULT},
        {"role": "assistant", "content": "This protocol sets up a PCR reaction."},
    ],
}

CHAT_HISTORY = {
    "conversation_id": "123456",
    "chat_history": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "How do I implement a neural network in Python?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/net.png"}},
            ],
            "context": [["page", "/notebooks/3"]],
        },
        {"role": "assistant", "content": "Use PyTorch.", "context": [["model", "gpt-4o"]]},
    ],
    "context": [["app", "lab-notebook"]],
}

CHAT_GRAPH: dict[str, Any] = {
    "conversation_id": "123456",
    "nodes": [
        {
            "node_id": "node-1",
            "parent_id": None,
            "timestamp": 1625216400,
            "message": {
                "id": "message-1",
                "author": {"role": "user", "metadata": {}},
                "content": {
                    "content_type": "text",
                    "parts": ["How do I implement a neural network in Python?"],
                },
                "context": [["", ""]],
            },
        },
        {
            "node_id": "node-2",
            "parent_id": "node-1",
            "timestamp": 1625216460,
            "message": {
                "id": "message-2",
                "author": {"role": "assistant", "metadata": {"model": "gpt-4o"}},
                "content": {"content_type": "text", "parts": ["Use TensorFlow."]},
                "context": [["", ""]],
            },
        },
        {
            "node_id": "node-3",
            "parent_id": "node-1",
            "timestamp": 1625216520,
            "message": {
                "id": "message-3",
                "author": {"role": "assistant", "metadata": {}},
                "content": {
                    "content_type": "text",
                    "parts": ["<think>PyTorch is simpler.</think>Use PyTorch."],
                },
                "context": [],
            },
        },
    ],
}


def _chatgpt_node(node_id: str, parent: str | None, children: list[str], message: Any) -> dict[str, Any]:
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def _chatgpt_message(node_id: str, role: str, content: dict[str, Any], **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": node_id,
        "author": {"role": role, "name": fields.pop("name", None), "metadata": {}},
        "create_time": fields.pop("create_time", None),
        "update_time": None,
        "content": content,
        "status": "finished_successfully",
        "end_turn": fields.pop("end_turn", None),
        "weight": fields.pop("weight", 1.0),
        "metadata": fields.pop("metadata", {}),
        "recipient": fields.pop("recipient", "all"),
    }
    message.update(fields)
    return message


CHATGPT_EXPORT: dict[str, Any] = {
    "title": "Gel analysis",
    "create_time": 1709280000.123456,
    "update_time": 1709280300.5,
    "mapping": {
        "aaa-root": _chatgpt_node("aaa-root", None, ["sys"], None),
        "sys": _chatgpt_node(
            "sys",
            "aaa-root",
            ["u1"],
            _chatgpt_message(
                "sys",
                "system",
                {"content_type": "text", "parts": [""]},
                weight=0.0,
                metadata={"is_visually_hidden_from_conversation": True},
            ),
        ),
        "u1": _chatgpt_node(
            "u1",
            "sys",
            ["a1", "a2"],
            _chatgpt_message(
                "u1",
                "user",
                {"content_type": "text", "parts": ["Plot the band sizes."]},
                create_time=1709280001.0,
            ),
        ),
        "a1": _chatgpt_node(
            "a1",
            "u1",
            [],
            _chatgpt_message(
                "a1",
                "assistant",
                {"content_type": "text", "parts": ["I cannot plot."]},
                create_time=1709280002.0,
                metadata={"model_slug": "gpt-4o"},
            ),
        ),
        "a2": _chatgpt_node(
            "a2",
            "u1",
            ["t1"],
            _chatgpt_message(
                "a2",
                "assistant",
                {"content_type": "code", "language": "python", "text": "plot([100, 250])"},
                create_time=1709280003.0,
                recipient="python",
                metadata={"model_slug": "gpt-4o"},
            ),
        ),
        "t1": _chatgpt_node(
            "t1",
            "a2",
            ["a3"],
            _chatgpt_message(
                "t1",
                "tool",
                {"content_type": "execution_output", "text": "<Figure>"},
                name="python",
                create_time=1709280004.0,
            ),
        ),
        "a3": _chatgpt_node(
            "a3",
            "t1",
            [],
            _chatgpt_message(
                "a3",
                "assistant",
                {"content_type": "text", "parts": ["Here is the plot."]},
                create_time=1709280005.0,
                end_turn=True,
                metadata={"model_slug": "gpt-4o"},
            ),
        ),
    },
    "moderation_results": [],
    "current_node": "a3",
    "plugin_ids": None,
    "conversation_id": "67e1c0de-0000-4000-8000-000000000001",
    "id": "67e1c0de-0000-4000-8000-000000000001",
    "default_model_slug": "gpt-4o",
    "safe_urls": [],
    "is_archived": False,
}


_ESCAPED_REASONING = (
    '<details type="reasoning" done="true" duration="1">\n<summary>Thought for 1 seconds</summary>\n'
    "&gt; The ladder&#x27;s 500 bp band is the brightest &amp; sits below both PCR bands.\n</details>\n"
)

# Open WebUI (a newer version: the reasoning quoted HTML-escaped). The active answer is a regeneration listed
# before the first one, `chat.messages` is stale (so kept verbatim), a PDF is attached, and an annotation without
# thumbs (tags only) is no rating.
OPENWEBUI = {
    "id": "0c3d7e52-9a1b-4f68-8e2d-5b7a9c1f3e04",
    "user_id": "6e1a9d3f-2b7c-4c85-a0e4-9f3b5d7c1a28",
    "title": "Band sizes from a protocol PDF",
    "chat": {
        "id": "",
        "title": "Band sizes from a protocol PDF",
        "models": ["deepseek-r1:14b", "llama3.1:8b"],
        "params": {},
        "history": {
            "messages": {
                "u1": {
                    "id": "u1",
                    "parentId": None,
                    "childrenIds": ["a1", "a2"],
                    "role": "user",
                    "content": "Which bands should I expect from this protocol?",
                    "timestamp": 1747210000,
                    "models": ["deepseek-r1:14b"],
                    "files": [
                        {
                            "type": "file",
                            "file": {"id": "4f2a", "filename": "pcr_protocol.pdf", "meta": {"size": 48213}},
                            "id": "4f2a",
                            "url": "/api/v1/files/4f2a",
                            "name": "pcr_protocol.pdf",
                            "collection_name": "file-4f2a",
                            "status": "uploaded",
                            "size": 48213,
                            "error": "",
                        }
                    ],
                },
                "a1": {
                    "parentId": "u1",
                    "id": "a1",
                    "childrenIds": [],
                    "role": "assistant",
                    "content": _ESCAPED_REASONING + "Two bands: 650 bp and 1,200 bp.",
                    "model": "deepseek-r1:14b",
                    "modelName": "DeepSeek R1 14B",
                    "modelIdx": 0,
                    "timestamp": 1747210009,
                    "done": True,
                    "sources": [{"source": {"type": "file", "id": "4f2a", "name": "pcr_protocol.pdf"}}],
                    "statusHistory": [{"done": True, "action": "sources_retrieved", "count": 1}],
                    "annotation": {"tags": ["bands"]},
                },
                "a2": {
                    "parentId": "u1",
                    "id": "a2",
                    "childrenIds": [],
                    "role": "assistant",
                    "content": "One band at 650 bp.",
                    "model": "llama3.1:8b",
                    "modelName": "Llama 3.1 8B",
                    "modelIdx": 1,
                    "timestamp": 1747210004,
                    "done": True,
                    "annotation": {"rating": -1, "reason": "Didn't fully follow instructions", "comment": ""},
                },
            },
            "currentId": "a1",
        },
        "messages": [{"id": "u1", "role": "user", "content": "Which bands should I expect from this protocol?"}],
        "tags": [],
        "timestamp": 1747209998421,
        "files": [],
    },
    "updated_at": 1747210012,
    "created_at": 1747209998,
    "share_id": None,
    "archived": False,
    "pinned": False,
    "meta": {},
    "folder_id": None,
}

DOCUMENTS: dict[str, dict[str, Any]] = {
    "openai": {"tools_legacy_and_inline_reasoning": OPENAI},
    "chat_document": {
        "masterbrain_with_feedback": CHAT_DOCUMENT,
        "history_with_null_scenario": CHAT_DOCUMENT_HISTORY,
    },
    "record_qa": {"seed_001_protocol_injection": RECORD_QA},
    "chat_history": {"multimodal_with_context": CHAT_HISTORY},
    "chat_graph": {"seed_with_a_regenerated_answer": CHAT_GRAPH},
    "chatgpt_export": {"branches_hidden_system_and_python": CHATGPT_EXPORT},
    "openwebui": {"escaped_reasoning_pdf_and_a_stale_linear_copy": OPENWEBUI},
}
