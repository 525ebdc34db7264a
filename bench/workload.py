"""The benchmark's workload: request bodies, long threads and million-message tables, all deterministic.

Documents come from ``chats.demo.generator.generate`` (every input format, tool calls with 1-5 KB results, injections
of 5-20 KB, images, branches); this module shapes them into what the benchmark sends and loads.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from chats.demo.generator import MODELS, SENTENCES, TOPICS, generate, openai_messages

# Enough turns for about 20 stored messages per conversation on average across the formats.
BENCH_TURNS = (4, 8)


def documents(count: int, *, seed: int, first_index: int = 0) -> list[Any]:
    """``count`` conversation documents in every format, about 20 messages each.

    Workloads meant to be disjoint take different ``first_index`` values (some formats number conversations).
    """
    return [document for _, document in generate(count, seed=seed, turns=BENCH_TURNS, first_index=first_index)]


def encode(document: Any) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def ndjson_bodies(docs: list[Any], *, per_body: int) -> list[bytes]:
    """Bulk request bodies of ``per_body`` documents each, one JSON document per line."""
    return [b"\n".join(encode(d) for d in docs[start : start + per_body]) for start in range(0, len(docs), per_body)]


def body_near(limit_bytes: int, max_items: int, *, seed: int, first_index: int = 0) -> bytes:
    """One NDJSON body as close to ``limit_bytes`` as whole documents allow (at most ``max_items`` of them)."""
    lines: list[bytes] = []
    size = 0
    for _, document in generate(max_items, seed=seed, turns=BENCH_TURNS, first_index=first_index):
        line = encode(document)
        if size + len(line) + 1 > limit_bytes:
            break
        lines.append(line)
        size += len(line) + 1
    return b"\n".join(lines)


def long_thread(message_count: int, *, seed: int) -> dict[str, Any]:
    """A chat document of exactly ``message_count`` messages: a long session with tool calls and injections."""
    rng = random.Random(seed)
    messages = openai_messages(
        rng,
        turns=message_count // 3 + 2,
        tools=True,
        inject=True,
        multimodal=True,
        result_size=600,
        injection_size=3000,
    )
    return {
        "chat_id": f"bench-thread-{message_count}-{seed}",
        "user_id": "airalogy.id.user.bench",
        "title": f"A {message_count}-message thread",
        "model": MODELS[0],
        "scenario_messages": messages[:1],
        "main_messages": messages[1:message_count],
    }


# --------------------------------------------------------------------------------------------------------------
# Million-message tables for the read benchmarks (P4), written straight by COPY.

RARE_WORDS = ["photobleaching", "spillover", "imidazole", "confluence", "antifade", "electroporation"]
ARTIFACT_POOL = 5000
SCALE_START = datetime(2024, 1, 1, tzinfo=UTC)


def scale_artifact_id(n: int) -> str:
    return f"airalogy.id.lab.bench.project.scale.protocol.p{n:05d}.v.0.1.0"


def scale_rows(
    conversation_count: int, per_conversation: int, *, source_id: int, seed: int
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(table, row) pairs for ``conversation_count`` linear conversations; ids start at 1 in every table.

    Each conversation: a user question, then assistant answers and user follow-ups; every second one has a tool
    call answered by a tool message, every fifth injects a protocol (an artifact id from a pool of 5,000).
    """
    rng = random.Random(seed)
    message_id = call_id = artifact_id = 0
    now = datetime(2026, 11, 1, tzinfo=UTC)
    sentences = list(SENTENCES)
    for conversation_id in range(1, conversation_count + 1):
        topic = TOPICS[conversation_id % len(TOPICS)]
        started = SCALE_START + timedelta(minutes=37 * conversation_id + rng.randint(0, 30))
        rare = RARE_WORDS[conversation_id % len(RARE_WORDS)] if conversation_id % 7 == 0 else ""
        with_tool = conversation_id % 2 == 0
        injects = conversation_id % 5 == 0
        first_message = message_id + 1
        texts: list[tuple[str, str]] = []
        for position in range(per_conversation):
            if position == 0:
                texts.append(("user", f"{topic[1]} {rare}".strip()))
            elif with_tool and position == 1:
                texts.append(("assistant", ""))
            elif with_tool and position == 2:
                texts.append(("tool", json.dumps({"search_result": [{"title": rng.choice(sentences)}] * 3})))
            elif position % 2 == 1:
                count = rng.randint(1, 6)
                texts.append(("assistant", " ".join(rng.choice(sentences) for _ in range(count))))
            else:
                texts.append(("user", f"Follow-up {position}: what about {rng.choice(topic[2])}?"))
        model = MODELS[conversation_id % len(MODELS)]
        model_name = model["name"] if isinstance(model, dict) else model
        yield (
            "chats_conversation",
            (
                conversation_id,
                str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                source_id,
                f"scale-{conversation_id:08d}",
                hashlib.sha256(f"scale-{conversation_id:08d}".encode()).hexdigest(),
                False,
                "openai",
                f"{topic[0]} troubleshooting",
                f"airalogy.id.user.{conversation_id % 40}",
                model_name,
                json.dumps(model),
                started,
                "[]",
                "{}",
                "{}",
                f"k{first_message + per_conversation - 1}",
                False,  # the loader builds the search vectors itself
                "unreviewed",
                per_conversation,
                1 if with_tool else 0,
                1 if injects and with_tool else 0,
                0,
                0,
                0,
                0,
                texts[0][1][:300],
                now,
                now,
                started,
            ),
        )
        for position, (role, text) in enumerate(texts):
            message_id += 1
            yield (
                "chats_message",
                (
                    message_id,
                    conversation_id,
                    f"k{message_id}",
                    "[]",
                    message_id - 1 if position else None,
                    position,
                    position,
                    0,
                    True,
                    role,
                    "",
                    "main",
                    "string",
                    json.dumps([{"type": "text", "text": text}]) if text else "[]",
                    text,
                    "",
                    "[]",
                    "{}",
                    f"call_{conversation_id}" if role == "tool" else "",
                    False,
                    False,
                    "",
                    "{}",
                    json.dumps({"role": role, "content": text}),
                    f"/main_messages/{position}",
                    now,
                ),
            )
            if with_tool and position == 1:
                call_id += 1
                name = "inject_airalogy_protocols" if injects else "airalogy_search"
                arguments = json.dumps({"keywords": [topic[0]]})
                yield (
                    "chats_toolcall",
                    (
                        call_id,
                        conversation_id,
                        message_id,
                        f"call_{conversation_id}",
                        0,
                        "function",
                        name,
                        arguments,
                        arguments,
                        "",
                        message_id + 1,
                        "{}",
                    ),
                )
                if injects:
                    artifact_id += 1
                    yield (
                        "chats_injectedartifact",
                        (
                            artifact_id,
                            conversation_id,
                            message_id,
                            call_id,
                            "protocol",
                            scale_artifact_id(rng.randrange(ARTIFACT_POOL)),
                            True,
                            name,
                            True,
                            True,
                        ),
                    )


SCALE_COLUMNS = {
    "chats_conversation": "id, uuid, source_id, external_id, external_id_digest, external_id_generated, input_format, "
    "title, user_external_id, model_name, model_config, started_at, context_pairs, metadata, original_times, "
    "active_leaf_key, search_stale, "
    "review_status, message_count, tool_call_count, artifact_count, branch_count, feedback_count, score_up, "
    "score_down, first_user_text, created_at, updated_at, last_activity_at",
    "chats_message": "id, conversation_id, key, aliases, parent_id, position, depth, sibling_index, on_active_path, role, "
    "name, section, content_form, parts, text, reasoning, context_pairs, author_metadata, tool_call_id, "
    "is_orphan_result, hidden, recipient, extra, raw, source_path, created_at",
    "chats_toolcall": "id, conversation_id, message_id, call_id, index, type, name, arguments, parsed_arguments, "
    "arguments_error, result_message_id, extra",
    "chats_injectedartifact": "id, conversation_id, message_id, tool_call_id, kind, artifact_id, id_well_formed, "
    "tool_name, requested, resolved",
}


def comparison_documents(count: int, *, seed: int, first_index: int = 0) -> list[dict[str, Any]]:
    """The workload compared with the tools a team would pick instead: OpenAI-style conversations of about 20
    messages with tool results of 1-5 KB JSON, as chat documents ``{chat_id, model, messages}``."""
    rng = random.Random(seed)
    docs = []
    for index in range(first_index, first_index + count):
        messages = openai_messages(
            rng,
            turns=rng.randint(4, 5),
            tools=True,
            inject=False,
            multimodal=False,
            result_size=rng.randint(1000, 5000),
            topic_index=index % len(TOPICS),
        )
        docs.append({"chat_id": f"compare-{index:07d}", "model": MODELS[index % len(MODELS)], "messages": messages})
    return docs


def idless_turns(count: int, *, turns: int, seed: int) -> list[list[list[dict[str, Any]]]]:
    """``turns`` rounds of ``count`` id-less OpenAI message lists: round t holds each conversation's history up to
    its turn t, as a logger that sends the growing history on every turn (with no id) sends it."""
    rng = random.Random(seed)
    histories = []
    for index in range(count):
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are Airalogy Masterbrain, a careful assistant for wet-lab research."}
        ]
        for turn in range(turns):
            topic = TOPICS[(index + turn) % len(TOPICS)]
            history.append({"role": "user", "content": f"Session {index}, question {turn}: what about {topic}?"})
            history.append({"role": "assistant", "content": " ".join(rng.sample(SENTENCES, 3))})
        histories.append(history)
    return [[history[: 1 + 2 * (turn + 1)] for history in histories] for turn in range(turns)]
