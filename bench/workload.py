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
# A word in most P4 conversations (bench's SENTENCES), and two words every match must have both of, each in many
# conversations but found together, in different messages, in fewer.
COMMON_WORD = "replicates"
AND_QUERY = "gradient contamination"
ARTIFACT_POOL = 5000
SCALE_START = datetime(2024, 1, 1, tzinfo=UTC)


def scale_artifact_id(n: int) -> str:
    return f"airalogy.id.lab.bench.project.scale.protocol.p{n:05d}.v.0.1.0"


# What the auditors' filters find in the P4 tables (?workflow=, ?has_warnings=, ?feedback_origin=), by conversation
# number: each a few percent of the conversations, spread over the whole time range, like real flags.
SCALE_WORKFLOWS = ["protocol_qa", "record_qa", "lab_assistant"]


def scale_flags(conversation_id: int) -> dict[str, Any]:
    """The warnings, workflow and feedback origins of P4 conversation number ``conversation_id``."""
    with_tool = conversation_id % 2 == 0
    injects = with_tool and conversation_id % 5 == 0
    origins = [
        origin
        for origin, (modulus, rest) in {
            "masterbrain": (11, 0),
            "chatgpt": (13, 1),
            "openwebui": (17, 2),
            "reviewer": (19, 3),
        }.items()
        if conversation_id % modulus == rest
    ]
    return {
        "workflow": SCALE_WORKFLOWS[conversation_id % 9 // 3] if conversation_id % 3 == 0 else "",
        "unanswered_call": with_tool and conversation_id % 50 in (2, 4),
        "orphan_result": with_tool and conversation_id % 50 == 4,  # a result for a call that is not there
        "invalid_arguments": with_tool and conversation_id % 90 == 6,
        "malformed_artifact_id": injects and conversation_id % 130 == 10,
        # A context (and so a verdict) on every fourth injecting conversation: half permit what they inject.
        "policy_violation": (conversation_id % 40 == 0) if injects and conversation_id % 20 == 0 else None,
        "malformed_context_id": injects and conversation_id % 20 == 0 and conversation_id % 7 == 0,
        "feedback_origins": origins,
    }


def scale_rows(
    conversation_count: int, per_conversation: int, *, source_id: int, seed: int, reviewer_id: int | None = None
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(table, row) pairs for ``conversation_count`` linear conversations; ids start at 1 in every table.

    Each conversation: a user question, then assistant answers and user follow-ups; every second one has a tool
    call answered by a tool message, every fifth injects a protocol (an artifact id from a pool of 5,000). A few
    carry what the auditors' filters look for (scale_flags): a workflow, an unanswered call, an orphan result,
    arguments that are not JSON, a malformed artifact id, a policy verdict, feedback of each origin (a reviewer's
    only with ``reviewer_id``, the user who gave it).
    """
    rng = random.Random(seed)
    message_id = call_id = artifact_id = feedback_id = context_id = 0
    now = datetime(2026, 11, 1, tzinfo=UTC)
    sentences = list(SENTENCES)
    for conversation_id in range(1, conversation_count + 1):
        topic = TOPICS[conversation_id % len(TOPICS)]
        started = SCALE_START + timedelta(minutes=37 * conversation_id + rng.randint(0, 30))
        rare = RARE_WORDS[conversation_id % len(RARE_WORDS)] if conversation_id % 7 == 0 else ""
        with_tool = conversation_id % 2 == 0
        injects = conversation_id % 5 == 0
        flags = scale_flags(conversation_id)
        origins = [o for o in flags["feedback_origins"] if o != "reviewer" or reviewer_id is not None]
        injected = ""
        if injects and with_tool:
            number = rng.randrange(ARTIFACT_POOL)
            injected = f"protocol-{number}" if flags["malformed_artifact_id"] else scale_artifact_id(number)
        # The ids the context lists: the one injected when it is permitted, another one when it is a violation.
        listed: list[tuple[str, bool, str]] = []
        if flags["policy_violation"] is not None:
            if flags["policy_violation"]:
                listed.append(
                    (f"airalogy.id.lab.bench.project.scale.protocol.listed{conversation_id}.v.0.1.0", True, "unused")
                )
            else:
                listed.append((injected, not flags["malformed_artifact_id"], "used"))
            if flags["malformed_context_id"]:
                listed.append((f"protocol-listed-{conversation_id}", False, "unused"))
        context = (
            {"inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [item[0] for item in listed]}}
            if listed
            else None
        )
        verdict = {None: None, True: "not_listed", False: "permitted"}[flags["policy_violation"]]
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
                "unreviewed",
                per_conversation,
                1 if with_tool else 0,
                1 if injects and with_tool else 0,
                0,
                len(origins),
                0,
                0,
                texts[0][1][:300],
                now,
                now,
                started,
                flags["workflow"],
                json.dumps({"workflow": flags["workflow"], "lab": "bench"}) if flags["workflow"] else None,
                flags["policy_violation"],
                json.dumps(context) if context is not None else None,
            ),
        )
        for listed_id, well_formed, state in listed:
            context_id += 1
            yield (
                "chats_contextartifactid",
                (context_id, conversation_id, "protocol", listed_id, well_formed, state),
            )
        for origin in origins:
            feedback_id += 1
            yield (
                "chats_feedback",
                (
                    feedback_id,
                    str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    conversation_id,
                    None,
                    origin,
                    reviewer_id if origin == "reviewer" else None,
                    rng.choice([-1, 0, 1]),
                    "",
                    "",
                    now,
                    now,
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
                    ("call_missing" if flags["orphan_result"] else f"call_{conversation_id}") if role == "tool" else "",
                    flags["orphan_result"] and role == "tool",
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
                parsed: str | None = arguments
                error = ""
                if flags["invalid_arguments"]:
                    arguments, parsed, error = '{"keywords": [PCR', None, "Expecting value: line 1 column 15 (char 14)"
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
                        parsed,
                        error,
                        None if flags["unanswered_call"] else message_id + 1,
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
                            injected,
                            not flags["malformed_artifact_id"],
                            name,
                            True,
                            True,
                            verdict,
                        ),
                    )


SCALE_COLUMNS = {
    "chats_conversation": "id, uuid, source_id, external_id, external_id_digest, external_id_generated, input_format, "
    "title, user_external_id, model_name, model_config, started_at, context_pairs, metadata, original_times, "
    "active_leaf_key, "
    "review_status, message_count, tool_call_count, artifact_count, branch_count, feedback_count, score_up, "
    "score_down, first_user_text, created_at, updated_at, last_activity_at, workflow, scenario, policy_violation, "
    "injection_context",
    "chats_message": "id, conversation_id, key, aliases, parent_id, position, depth, sibling_index, on_active_path, role, "
    "name, section, content_form, parts, text, reasoning, context_pairs, author_metadata, tool_call_id, "
    "is_orphan_result, hidden, recipient, extra, raw, source_path, created_at",
    "chats_toolcall": "id, conversation_id, message_id, call_id, index, type, name, arguments, parsed_arguments, "
    "arguments_error, result_message_id, extra",
    "chats_injectedartifact": "id, conversation_id, message_id, tool_call_id, kind, artifact_id, id_well_formed, "
    "tool_name, requested, resolved, verdict",
    "chats_contextartifactid": "id, conversation_id, kind, artifact_id, id_well_formed, state",
    "chats_feedback": "id, uuid, conversation_id, message_id, origin, author_id, score, comment, correction, "
    "created_at, updated_at",
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


def growth_turn(turn: int, *, chat_id: str) -> dict[str, Any]:
    """Turn ``turn`` (from 1) of one conversation grown 2 messages a turn: a chat document holding only the turn's
    user question and assistant answer (about 1 KB), which the service appends after the conversation's active
    message. Each turn's words differ (its number), so no message matches a stored one."""
    rng = random.Random(turn)
    topic = TOPICS[turn % len(TOPICS)]
    answer = " ".join(rng.choice(SENTENCES) for _ in range(12))
    return {
        "chat_id": chat_id,
        "messages": [
            {"role": "user", "content": f"Turn {turn}: {topic[1]} What about {rng.choice(topic[2])}?"},
            {"role": "assistant", "content": f"For turn {turn}: {answer}"},
        ],
    }
