"""Deterministic, realistic conversation documents in every input format.

Used by `seed_demo` (a few dozen varied conversations) and by the benchmarks (thousands). The same seed gives the
same documents, byte for byte.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from chats.json_types import JSONArray, JSONObject

TOPICS = [
    (
        "PCR",
        "Why are there nonspecific bands after my PCR?",
        ["primer dimers", "annealing temperature", "Mg2+"],
    ),
    ("Western blot", "My Western blot has a high background. What should I change?", ["blocking", "washes"]),
    ("Cell culture", "How do I passage HEK293T cells without losing viability?", ["trypsin", "confluence"]),
    ("qPCR", "How should I normalise qPCR data across plates?", ["reference genes", "ΔΔCt", "efficiency"]),
    (
        "Cloning",
        "Gibson assembly gave no colonies. What went wrong?",
        ["overlap length", "DpnI", "competent cells"],
    ),
    ("ELISA", "My ELISA standard curve is flat at the top.", ["saturation", "dilution series"]),
    ("Microscopy", "How do I reduce photobleaching in live imaging?", ["exposure", "antifade"]),
    ("CRISPR", "How can I check knockout efficiency after CRISPR editing?", ["T7E1", "TIDE", "sequencing"]),
    ("Flow cytometry", "How do I set compensation for four colours?", ["single stains", "spillover"]),
    (
        "Protein purification",
        "My His-tag protein elutes in the flow-through.",
        ["imidazole", "tag accessibility"],
    ),
]
MODELS: list[Any] = [
    {"name": "qwen3.5-flash", "enable_thinking": True},
    {"name": "qwen3.5-plus", "enable_thinking": False},
    "gpt-4.1-mini",
    "deepseek-r1",
]
SENTENCES = [
    "Start by checking the reagent lot numbers and the expiry dates.",
    "A gradient run is the quickest way to find the best annealing temperature.",
    "Lowering the primer concentration usually reduces primer-dimer formation.",
    "Always include a no-template control so contamination shows up early.",
    "Record the exact incubation times, since small changes add up across replicates.",
    "If the problem persists, repeat the experiment with freshly prepared buffers.",
    "The protocol's step 4 asks for a 30 second extension per kilobase of product.",
    "Compare the result with the positive control before changing several variables at once.",
    "Use **two biological replicates** at minimum, and keep the technical replicates separate.",
    "A table of the conditions you tried helps the next person reproduce the result.",
]


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _answer(rng: random.Random, low: int = 200, high: int = 1500) -> str:
    target = rng.randint(low, high)
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < target:
        parts.append(rng.choice(SENTENCES))
    if rng.random() < 0.3:
        parts.insert(1, "\n\n| condition | result |\n|---|---|\n| 58 °C | smear |\n| 62 °C | single band |\n\n")
    return " ".join(parts)


def _protocol_id(rng: random.Random, malformed: bool = False) -> str:
    if malformed:
        return f"protocol-{rng.randint(1, 999)}"
    lab, project, name = (
        rng.choice(["zhang_lab", "wet_lab", "biofab"]),
        rng.choice(["pcr_opt", "cell_core"]),
        rng.choice(["touchdown_pcr", "hek_passage", "gibson_assembly"]),
    )
    return f"airalogy.id.lab.{lab}.project.{project}.protocol.{name}.v.0.{rng.randint(0, 3)}.{rng.randint(0, 9)}"


def _json_blob(rng: random.Random, size: int) -> JSONObject:
    rows: JSONArray = []
    while len(json.dumps(rows)) < size:
        rows.append(
            {
                "title": rng.choice(SENTENCES)[:60],
                "score": round(rng.random(), 3),
                "doi": f"10.1000/{rng.randint(1000, 99999)}",
            }
        )
    return {"search_result": rows}


def _protocol_item(rng: random.Random, protocol_id: str, size: int) -> JSONObject:
    steps: list[str] = []
    while sum(len(step) for step in steps) < size:
        steps.append(f"{len(steps) + 1}. {rng.choice(SENTENCES)}")
    return {
        "airalogy_protocol_id": protocol_id,
        "markdown": "# Protocol\n\n## Steps\n\n" + "\n".join(steps),
        "field_json_schema": {"type": "object", "properties": {"annealing_temp": {"type": "number"}}},
    }


def _record_item(rng: random.Random, record_id: str, size: int) -> JSONObject:
    values: JSONObject = {f"var_{i}": round(rng.uniform(0, 100), 2) for i in range(max(size // 40, 4))}
    return {
        "airalogy_record_id": record_id,
        "metadata": {"protocol_id": _protocol_id(rng), "created_by": "user_" + str(rng.randint(1, 40))},
        "data": {
            "var": values,
            "step": {"step_1": {"checked": True}},
            "check": {"check_1": {"checked": True}},
        },
    }


def openai_messages(
    rng: random.Random,
    *,
    turns: int,
    tools: bool,
    inject: bool,
    multimodal: bool,
    unanswered: bool = False,
    parallel: bool = False,
    result_size: int = 2000,
    injection_size: int = 8000,
    topic_index: int | None = None,
) -> list[dict[str, Any]]:
    """An OpenAI-style history: a system prompt, then turns with tool calls, injections and images."""
    topic = TOPICS[topic_index if topic_index is not None else rng.randrange(len(TOPICS))]
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You are Airalogy Masterbrain, a careful assistant for wet-lab research.",
        }
    ]
    call_number = 0
    for turn in range(turns):
        question = topic[1] if turn == 0 else f"Follow-up {turn}: what about {rng.choice(topic[2])}?"
        if multimodal and turn == 0:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": question},
                        {"type": "image_url", "image_url": "https://example.com/gel-image.png"},
                    ],
                }
            )
        else:
            messages.append({"role": "user", "content": question})
        if inject and turn == 0:
            protocol_id = _protocol_id(rng)
            record_id = f"airalogy.id.record.{_uuid(rng)}.v.1"
            call_number += 2
            p_call, r_call = f"call_{call_number - 1:04d}", f"call_{call_number:04d}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": p_call,
                            "type": "function",
                            "function": {
                                "name": "inject_airalogy_protocols",
                                "arguments": json.dumps({"airalogy_protocol_ids": [protocol_id]}),
                            },
                        },
                        {
                            "id": r_call,
                            "type": "function",
                            "function": {
                                "name": "inject_airalogy_records",
                                "arguments": json.dumps({"airalogy_record_ids": [record_id]}),
                            },
                        },
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": p_call,
                    "content": json.dumps({"airalogy_protocols": [_protocol_item(rng, protocol_id, injection_size)]}),
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": r_call,
                    "content": json.dumps({"airalogy_records": [_record_item(rng, record_id, injection_size // 2)]}),
                }
            )
        if tools:
            calls = []
            for _ in range(2 if parallel else 1):
                call_number += 1
                calls.append(
                    {
                        "id": f"call_{call_number:04d}",
                        "type": "function",
                        "function": {
                            "name": rng.choice(["airalogy_search", "pubmed_search"]),
                            "arguments": json.dumps({"keywords": [topic[0], rng.choice(topic[2])]}),
                        },
                    }
                )
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for index, call in enumerate(calls):
                if unanswered and turn == turns - 1 and index == len(calls) - 1:
                    continue
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": json.dumps(_json_blob(rng, result_size)),
                    }
                )
        answer: dict[str, Any] = {"role": "assistant", "content": _answer(rng)}
        if rng.random() < 0.3:
            answer["reasoning_content"] = (
                "The user asks about " + rng.choice(topic[2]) + "; check the usual causes first."
            )
        messages.append(answer)
    return messages


def _iso(moment: datetime, rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        return moment.isoformat()
    if style == 1:
        return moment.astimezone(UTC).replace(tzinfo=None).isoformat()  # naive, as some producers send
    return moment.astimezone(timezone(timedelta(hours=8))).isoformat()


def to_format(
    fmt: str,
    rng: random.Random,
    messages: list[dict[str, Any]],
    *,
    index: int,
    start: datetime,
    branch: bool = False,
) -> Any:
    """Wrap an OpenAI message list in one of the input formats."""
    conv_id = f"airalogy.id.chat.{_uuid(rng)}"
    model = MODELS[index % len(MODELS)]
    if fmt == "openai":
        return messages
    if fmt == "chat_document":
        main = messages[1:]
        return {
            "chat_id": conv_id,
            "user_id": f"airalogy.id.user.{rng.randint(1, 40)}",
            "start_time": _iso(start, rng),
            "end_time": _iso(start + timedelta(minutes=rng.randint(2, 40)), rng),
            "title": TOPICS[index % len(TOPICS)][0] + " troubleshooting",
            "active": True,
            "deleted": False,
            "model": model,
            "system_message_name": "masterbrain_default",
            "scenario": {"workflow": "lab_assistant", "lab": "zhang_lab"},
            "scenario_messages": messages[:1],
            "main_messages": main,
            "human_feedback": [
                {
                    "score": rng.choice([0, 0, 1, -1]) if m["role"] == "assistant" and m.get("content") else 0,
                    "additional": "",
                }
                for m in main
            ],
        }
    if fmt == "record_qa":
        ids = [
            json.loads(c["function"]["arguments"]).get("airalogy_protocol_ids", [])
            for m in messages
            for c in m.get("tool_calls", [])
            if c["function"]["name"] == "inject_airalogy_protocols"
        ]
        return {
            "chat_id": conv_id,
            "context": {
                "inject_airalogy_protocols": {
                    "enabled": True,
                    "airalogy_protocol_ids": [i for group in ids for i in group],
                },
                "inject_airalogy_records": {"enabled": True, "airalogy_record_ids": []},
                "inject_airalogy_discussions": {
                    "enabled": False,
                    "scope": "lab",
                    "airalogy_discussion_ids": [],
                },
            },
            "main_messages": messages,
        }
    if fmt == "chat_history":
        history = [
            {
                "role": m["role"],
                "content": m["content"] if isinstance(m["content"], str) else m["content"] or "",
            }
            for m in messages
            if m["role"] in ("user", "assistant", "system") and not m.get("tool_calls")
        ]
        history[-1]["context"] = [["retrieval", "lab notebook 2026-11"], ["confidence", "medium"]]
        return {
            "conversation_id": str(100000 + index),
            "chat_history": history,
            "context": [["channel", "web"], ["locale", "en"]],
        }
    if fmt == "chat_graph":
        nodes = []
        linear = [
            m
            for m in messages
            if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str) and m["content"]
        ]
        timestamp = int(start.timestamp())
        for position, message in enumerate(linear):
            timestamp += rng.randint(5, 120)
            nodes.append(
                {
                    "node_id": f"node-{position + 1}",
                    "parent_id": f"node-{position}" if position else None,
                    "timestamp": timestamp,
                    "message": {
                        "id": f"message-{position + 1}",
                        "author": {"role": message["role"], "metadata": {}},
                        "content": {"content_type": "text", "parts": [message["content"]]},
                        "context": [],
                    },
                }
            )
        if branch and len(nodes) >= 2:
            parent = nodes[-2]["node_id"]
            nodes.append(
                {
                    "node_id": f"node-{len(nodes) + 1}",
                    "parent_id": parent,
                    "timestamp": timestamp + 60,
                    "message": {
                        "id": f"message-{len(nodes) + 1}",
                        "author": {"role": "assistant", "metadata": {}},
                        "content": {"content_type": "text", "parts": [_answer(rng, 200, 500)]},
                        "context": [],
                    },
                }
            )
        return {"conversation_id": f"graph-{index:05d}", "nodes": nodes}
    if fmt == "chatgpt_export":
        mapping: dict[str, Any] = {}
        conv_uuid = _uuid(rng)
        root = _uuid(rng)
        mapping[root] = {"id": root, "message": None, "parent": None, "children": []}
        parent = root
        current = root
        create = start.timestamp()
        for message in messages:
            if message["role"] not in ("user", "assistant", "system") or message.get("tool_calls"):
                continue
            node_id = _uuid(rng)
            create += rng.uniform(1, 60)
            text = (
                message["content"]
                if isinstance(message["content"], str)
                else " ".join(p.get("text", "") for p in message["content"] or [] if isinstance(p, dict))
            )
            mapping[node_id] = {
                "id": node_id,
                "parent": parent,
                "children": [],
                "message": {
                    "id": node_id,
                    "author": {"role": message["role"], "name": None, "metadata": {}},
                    "create_time": round(create, 3),
                    "update_time": None,
                    "content": {"content_type": "text", "parts": [text]},
                    "status": "finished_successfully",
                    "end_turn": message["role"] == "assistant",
                    "weight": 0.0 if message["role"] == "system" else 1.0,
                    "metadata": {"model_slug": "gpt-4o"} if message["role"] == "assistant" else {},
                    "recipient": "all",
                },
            }
            mapping[parent]["children"].append(node_id)
            parent = current = node_id
        return {
            "title": TOPICS[index % len(TOPICS)][0],
            "create_time": start.timestamp(),
            "update_time": create,
            "mapping": mapping,
            "current_node": current,
            "conversation_id": conv_uuid,
            "id": conv_uuid,
            "default_model_slug": "gpt-4o",
            "moderation_results": [],
            "is_archived": False,
        }
    raise ValueError(f"unknown format {fmt!r}")


FORMAT_CYCLE = [
    "chat_document",
    "record_qa",
    "openai",
    "chat_history",
    "chat_graph",
    "chatgpt_export",
    "chat_document",
    "record_qa",
]


def generate(
    count: int,
    *,
    seed: int = 7,
    turns: tuple[int, int] = (1, 3),
    result_size: tuple[int, int] = (1000, 5000),
    injection_size: tuple[int, int] = (5000, 20000),
    first_index: int = 0,
) -> Iterator[tuple[str, Any]]:
    """Yield (format, document) pairs: varied, realistic and deterministic for a seed.

    Some formats number their conversations by position (``graph-00004``); workloads that must not share a
    conversation start at different ``first_index`` values.
    """
    rng = random.Random(seed)
    start = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)
    for index in range(first_index, first_index + count):
        fmt = FORMAT_CYCLE[index % len(FORMAT_CYCLE)]
        messages = openai_messages(
            rng,
            turns=rng.randint(*turns),
            tools=rng.random() < 0.7,
            inject=fmt == "record_qa" or rng.random() < 0.2,
            multimodal=rng.random() < 0.15,
            unanswered=index % 17 == 5,
            parallel=index % 5 == 0,
            result_size=rng.randint(*result_size),
            injection_size=rng.randint(*injection_size),
            topic_index=index % len(TOPICS),
        )
        moment = start + timedelta(hours=index * 7 + rng.randint(0, 6))
        yield fmt, to_format(fmt, rng, messages, index=index, start=moment, branch=index % 6 == 4)
