"""L1: what the parsers cost against the size of their input, on inputs built to make them slow.

Each case builds an input out of repetitions of what one parser looks for (its tags, delimiters, id prefixes and
separators, parent links, tool calls, parts) at about 10 KB and at about 100 times that, and times the parser on
both in the same run. A parser linear in its input takes about x100 the time for x100 the bytes, so its growth
(time ratio / bytes ratio) is about 1; a quadratic one's is about 100. ``tests/ingest/test_linear_cost.py``
checks every case and ``bench/run.py`` prints the worst.
"""

from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chats import ingest, strict_json
from chats.formats.canonical import Issues, ParseError
from chats.ingest import chatgpt_export
from chats.ingest.common import context_pairs, extract_inline_reasoning, parse_arguments, split_think
from chats.ingest.injections import id_well_formed, injection_kind

SMALL_BYTES = 10_000
FACTOR = 100
# The most the cost per byte may grow from the small input to the large one: linear parsers stay near 1 (the
# large input misses caches more), a quadratic one reaches about FACTOR.
MAX_GROWTH = 25.0

UUID = "0b7e4c1a-5d2f-4e8a-9c3b-7f1e2d4a6b8c"
BIG = 10**9  # a count limit no case reaches: the counters scan the whole body


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[int], Any]  # n repetitions -> the input
    run: Callable[[Any], object]


@dataclass(frozen=True)
class Figures:
    case: str
    small_bytes: int
    large_bytes: int
    small_seconds: float
    large_seconds: float

    @property
    def bytes_ratio(self) -> float:
        return self.large_bytes / self.small_bytes

    @property
    def time_ratio(self) -> float:
        return self.large_seconds / self.small_seconds

    @property
    def growth(self) -> float:
        """How much the cost per byte grew from the small input to the large one."""
        return self.time_ratio / self.bytes_ratio

    def __str__(self) -> str:
        return (
            f"{self.case}: x{self.time_ratio:,.0f} the time for x{self.bytes_ratio:,.0f} the bytes "
            f"({self.small_bytes / 1e3:,.0f} KB {self.small_seconds * 1e3:.2f} ms, "
            f"{self.large_bytes / 1e6:.1f} MB {self.large_seconds * 1e3:.0f} ms): growth x{self.growth:.2f}"
        )


# --- measuring ------------------------------------------------------------------------------------------------


def size_of(value: Any) -> int:
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, str):
        return len(value.encode(errors="surrogatepass"))
    return len(json.dumps(value))


def build_near(case: Case, target: int) -> Any:
    """The case's input with as many repetitions as bring it near ``target`` bytes."""
    one, two = size_of(case.build(1)), size_of(case.build(2))
    per_unit = max(two - one, 1)
    return case.build(max(1, (target - one) // per_unit + 1))


def _best_seconds(run: Callable[[Any], object], value: Any, repeats: int) -> float:
    """The best of at least ``repeats`` timings (more while they take under 20 ms in all), each of enough calls to
    last a millisecond, with the collector off (as timeit does, so that a collection started by another case does
    not land in this one)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        run(value)
        best = time.perf_counter() - started
        calls = max(1, min(1000, math.ceil(0.001 / max(best, 1e-9))))
        samples = 1 if calls == 1 else 0  # a single call's first timing is a sample
        while samples < repeats or (samples < 20 and time.perf_counter() - started < 0.02):
            start = time.perf_counter()
            for _ in range(calls):
                run(value)
            best = min(best, (time.perf_counter() - start) / calls)
            samples += 1
        return best
    finally:
        if enabled:
            gc.enable()


def measure(case: Case, *, small: int = SMALL_BYTES, factor: int = FACTOR, attempts: int = 3) -> Figures:
    """Time ``case`` at ``small`` bytes and at ``factor`` times that. A figure over MAX_GROWTH is measured again
    (up to ``attempts`` times, keeping the lowest), so that a pause of a busy machine is not taken for a cost."""
    small_input, large_input = build_near(case, small), build_near(case, small * factor)
    small_bytes, large_bytes = size_of(small_input), size_of(large_input)
    best: Figures | None = None
    for attempt in range(attempts):
        figures = Figures(
            case.name,
            small_bytes,
            large_bytes,
            _best_seconds(case.run, small_input, repeats=5 + 5 * attempt),
            _best_seconds(case.run, large_input, repeats=1 + attempt),
        )
        if best is None or figures.growth < best.growth:
            best = figures
        if best.growth <= MAX_GROWTH:
            break
    assert best is not None
    return best


def worst(cases: tuple[Case, ...] | None = None) -> tuple[Figures, int]:
    """The case whose cost per byte grows most, and how many cases were measured."""
    measured = [measure(case) for case in cases or CASES]
    return max(measured, key=lambda figures: figures.growth), len(measured)


# --- inputs -----------------------------------------------------------------------------------------------------


def _parse(format: str) -> Callable[[Any], object]:
    def run(document: Any) -> object:
        try:
            return ingest.parse_document(document, format=format)
        except ParseError as error:  # refusing costs what parsing does
            return error

    return run


def _user(text: Any = "q") -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _call(call_id: str, name: str = "search", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _calling(calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _malformed_ids(n: int) -> list[str]:
    return [f"airalogy.id.{i}..v.." for i in range(n)]


def _injection_items(n: int) -> str:
    return json.dumps([{"airalogy_protocol_id": f"airalogy.id.{i}..v.."} for i in range(n)])


def _node(node_id: str, parent: str | None, role: str = "user", text: str = "q", **keys: Any) -> dict[str, Any]:
    message = {"author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, **keys}
    return {"node_id": node_id, "parent_id": parent, "message": message}


def _graph(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"conversation_id": "c", "nodes": nodes}


def _chatgpt_node(
    node_id: str, parent: str | None, role: str = "user", text: str = "q", **message: Any
) -> dict[str, Any]:
    body = {
        "id": node_id,
        "author": {"role": role, **({"name": message.pop("name")} if "name" in message else {})},
        "content": {"content_type": "text", "parts": [text]},
        **message,
    }
    return {"id": node_id, "message": body, "parent": parent, "children": []}


def _chatgpt(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "c", "title": "t", "mapping": {node["id"]: node for node in nodes}, "current_node": nodes[-1]["id"]}


def _chain(n: int, reverse: bool = False) -> list[dict[str, Any]]:
    nodes = [_node(f"n{i}", f"n{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant") for i in range(n)]
    return nodes[::-1] if reverse else nodes


def _chatgpt_chain(n: int, reverse: bool = False) -> dict[str, Any]:
    nodes = [
        _chatgpt_node(f"m{i}", f"m{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant") for i in range(n)
    ]
    document = _chatgpt(nodes)
    if reverse:
        document["mapping"] = dict(reversed(document["mapping"].items()))
    return document


def _tool_turn(n: int) -> dict[str, Any]:
    """One turn: a call to python, then n tool messages named otherwise, each the child of the one before."""
    nodes = [_chatgpt_node("u", None), _chatgpt_node("a", "u", "assistant", "print(1)", recipient="python")]
    nodes += [
        _chatgpt_node(f"t{i}", nodes[-1]["id"] if i == 0 else f"t{i - 1}", "tool", "x", name="browser")
        for i in range(n)
    ]
    return _chatgpt(nodes)


def _recipients(n: int) -> dict[str, Any]:
    """n assistant messages each addressed to another tool, then n tool messages answering the first ones."""
    nodes = [_chatgpt_node("u", None)]
    for i in range(n):
        nodes.append(_chatgpt_node(f"a{i}", nodes[-1]["id"], "assistant", "x", recipient=f"tool{i}"))
    for i in range(n):
        nodes.append(_chatgpt_node(f"t{i}", nodes[-1]["id"], "tool", "x", name=f"tool{i}"))
    return _chatgpt(nodes)


def _metadata_calls(n: int) -> dict[str, Any]:
    """One message whose metadata holds n injection calls of malformed ids, none answered."""
    calls = [
        _call(f"c{i}", "inject_airalogy_protocols", json.dumps({"airalogy_protocol_ids": [f"bad.{i}"]}))
        for i in range(n)
    ]
    nodes = [_chatgpt_node("u", None), _chatgpt_node("a", "u", "assistant", "x", metadata={"tool_calls": calls})]
    return _chatgpt(nodes)


def _apply_feedback(entries: list[Any]) -> object:
    return chatgpt_export.apply_message_feedback([chatgpt_export.parse(_chatgpt_chain(2))], entries)


def _webui_message(
    message_id: str, parent: str | None, role: str = "user", content: str = "q", **keys: Any
) -> dict[str, Any]:
    return {"id": message_id, "parentId": parent, "childrenIds": [], "role": role, "content": content, **keys}


def _webui(messages: list[dict[str, Any]]) -> dict[str, Any]:
    history = {"messages": {message["id"]: message for message in messages}, "currentId": messages[-1]["id"]}
    return {"id": "c", "title": "t", "chat": {"models": ["m"], "history": history, "messages": messages}}


def _webui_reply(content: str) -> dict[str, Any]:
    return _webui([_webui_message("u", None), _webui_message("a", "u", "assistant", content)])


def _webui_chain(n: int, reverse: bool = False) -> dict[str, Any]:
    messages = [
        _webui_message(f"w{i}", f"w{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant") for i in range(n)
    ]
    document = _webui(messages)
    if reverse:
        history = document["chat"]["history"]
        history["messages"] = dict(reversed(history["messages"].items()))
    return document


def _fill(unit: bytes, n: int, head: bytes = b"[[", tail: bytes = b"]]") -> bytes:
    return head + unit * n + tail


def _case(name: str, build: Callable[[int], Any], run: Callable[[Any], object]) -> Case:
    return Case(name, build, run)


_THINK_CASES = [
    _case(f"split_think/{label}", build, split_think)
    for label, build in [
        ("opening tags", lambda n: "<think>" * n),
        ("closing tags", lambda n: "</think>" * n),
        ("bare tag ends", lambda n: "think>" * n),
        ("blocks", lambda n: "<think>a</think>b" * n),
        ("a closing tag then openings", lambda n: "</think>" + "<think>" * n),
        ("openings then a closing tag", lambda n: "<think>" * n + "</think>"),
        ("tags joined by removing blocks", lambda n: "</thi<think>x</think>nk>" * n),
        ("reasoning details tags", lambda n: '<details type="reasoning">' * n + "</details>" * n),
    ]
] + [
    _case(
        "extract_inline_reasoning/parts",
        lambda n: [{"type": "text", "text": "<think>a</think>b"}] * n,
        extract_inline_reasoning,
    ),
    _case(
        "extract_inline_reasoning/parts of reasoning only",
        lambda n: [{"type": "text", "text": "<think>a</think>"}] * n,
        extract_inline_reasoning,
    ),
]

_ARGUMENT_CASES = [
    _case(f"parse_arguments/{label}", build, parse_arguments)
    for label, build in [
        ("opening brackets", lambda n: "[" * n),
        ("opening braces", lambda n: "{" * n),
        ("open objects", lambda n: '{"a":' * n),
        ("quotes", lambda n: '"' * n),
        ("escaped quotes", lambda n: '"' + '\\"' * n + '"'),
        ("open arrays of items", lambda n: "[1," * n),
        ("a long array", lambda n: "[" + "1," * n + "1]"),
        ("digits", lambda n: "1" * n),
        ("fraction digits", lambda n: "0." + "1" * n),
        ("exponent digits", lambda n: "1e" + "1" * n),
    ]
]

_ID_CASES = [
    _case(
        f"id_well_formed/{label}",
        build,
        lambda artifact_id: [
            id_well_formed(kind, artifact_id) for kind in ("protocol", "record", "discussion", "file")
        ],
    )
    for label, build in [
        ("a run of dots", lambda n: "airalogy.id.lab." + "." * n),
        ("repeated prefixes", lambda n: "airalogy.id." * n),
        ("version separators", lambda n: f"airalogy.id.protocol.{UUID}" + ".v." * n),
        ("version numbers", lambda n: f"airalogy.id.protocol.{UUID}.v." + "1." * n + "x"),
        ("snake segments", lambda n: "airalogy.id.lab." + "a_" * n + "!"),
        ("snake segments then dots", lambda n: "airalogy.id.lab.a.project." + "a_a." * n + "protocol.p.v.1.2"),
        ("file extension", lambda n: f"airalogy.id.file.{UUID}." + "a" * n + "."),
        ("record versions", lambda n: f"airalogy.id.record.{UUID}" + ".v.1" * n),
    ]
] + [
    _case(
        "injection_kind/uploaded file tool name",
        lambda n: "processing_user_uploaded_" + "a_" * n + "fil",
        injection_kind,
    ),
    _case("context_pairs/pairs", lambda n: [["a", "b"]] * n, lambda pairs: context_pairs(pairs, "", Issues())),
    _case(
        "context_pairs/a bad pair last",
        lambda n: [["a", "b"]] * n + [["a"]],
        lambda pairs: context_pairs(pairs, "", Issues()),
    ),
]

_OPENAI_CASES = [
    _case(f"openai/{label}", build, _parse("openai"))
    for label, build in [
        ("messages", lambda n: [_user(), _assistant("a")] * n),
        ("opening think tags", lambda n: [_user(), _assistant("<think>" * n)]),
        ("closing think tags", lambda n: [_user(), _assistant("</think>" * n)]),
        ("think parts", lambda n: [_user(), _assistant([{"type": "text", "text": "<think>a</think>b"}] * n)]),
        ("reasoning details tags", lambda n: [_user(), _assistant('<details type="reasoning">x</details>' * n)]),
        ("many parts", lambda n: [_user([{"type": "image_url", "image_url": {"url": "u"}}] * n)]),
        (
            "answered tool calls",
            lambda n: [_calling([_call(f"c{i}") for i in range(n)])] + [_result(f"c{i}") for i in range(n)],
        ),
        ("tool calls sharing an id", lambda n: [_calling([_call("c")] * n), _result("c")]),
        ("tool calls without ids", lambda n: [_calling([{"function": {"name": "f", "arguments": "{}"}}] * n)]),
        ("orphan results", lambda n: [_user()] + [_result(f"x{i}") for i in range(n)]),
        (
            "legacy function calls then their results",
            lambda n: (
                [
                    {"role": "assistant", "content": f"{i}", "function_call": {"name": "f", "arguments": "{}"}}
                    for i in range(n)
                ]
                + [{"role": "function", "name": "f", "content": "r"}] * n
            ),
        ),
        ("arguments of opening brackets", lambda n: [_calling([_call("c", arguments="[" * n)])]),
        ("arguments of open objects", lambda n: [_calling([_call("c", arguments='{"a":' * n)])]),
        ("arguments of escaped quotes", lambda n: [_calling([_call("c", arguments='"' + '\\"' * n + '"')])]),
        ("many calls of bracket arguments", lambda n: [_calling([_call(f"c{i}", arguments="[[[[") for i in range(n)])]),
        (
            "arguments that are not a string",
            lambda n: [_calling([{"id": "c", "function": {"name": "f", "arguments": {"a": [1] * n}}}])],
        ),
    ]
]

_INJECTION_CASES = [
    _case(f"injections/{label}", build, _parse("openai"))
    for label, build in [
        (
            "many requested and resolved ids",
            lambda n: [
                _calling(
                    [_call("c", "inject_airalogy_protocols", json.dumps({"airalogy_protocol_ids": _malformed_ids(n)}))]
                ),
                _result("c", _injection_items(n)),
            ],
        ),
        (
            "calls sharing an id and one result",
            lambda n: [
                _calling([_call("c", "inject_airalogy_protocols", '{"airalogy_protocol_ids": ["p"]}')] * n),
                _result("c", _injection_items(n)),
            ],
        ),
        (
            "many calls each answered",
            lambda n: (
                [
                    _calling(
                        [_call(f"c{i}", "inject_airalogy_protocols", '{"ids": ["airalogy.id.."]}') for i in range(n)]
                    )
                ]
                + [_result(f"c{i}", _injection_items(1)) for i in range(n)]
            ),
        ),
        (
            "a result that is not JSON",
            lambda n: [_calling([_call("c", "inject_airalogy_records")]), _result("c", "[" * n)],
        ),
    ]
]

_WRAPPER_CASES = [
    _case(
        "chat_document/messages and feedback",
        lambda n: {
            "chat_id": "c",
            "main_messages": [_user(), _assistant("a")] * n,
            "human_feedback": [{"score": 1, "additional": "x"}] * (2 * n),
        },
        _parse("chat_document"),
    ),
    _case(
        "chat_document/scenario messages",
        lambda n: {"chat_id": "c", "scenario_messages": [_user("s")] * n, "history": [_user()]},
        _parse("chat_document"),
    ),
    _case(
        "record_qa/context ids and injections",
        lambda n: {
            "context": {"inject_airalogy_protocols": {"enabled": True, "ids": _malformed_ids(n)}},
            "main_messages": [
                message
                for i in range(n)
                for message in (
                    _calling(
                        [_call(f"c{i}", "inject_airalogy_protocols", json.dumps({"airalogy_protocol_ids": [f"p{i}"]}))]
                    ),
                    _result(f"c{i}", "[]"),
                )
            ],
        },
        _parse("record_qa"),
    ),
    _case(
        "chat_history/messages with context pairs",
        lambda n: {"chat_history": [{**_user(), "context": [["a", "b"]]}, _assistant("a")] * n},
        _parse("chat_history"),
    ),
    _case(
        "chat_history/context pairs",
        lambda n: {"chat_history": [_user()], "context": [["a", "b"]] * n},
        _parse("chat_history"),
    ),
    _case(
        "chat_history/context pairs, a bad one last",
        lambda n: {"chat_history": [_user()], "context": [["a", "b"]] * n + [["a"]]},
        _parse("chat_history"),
    ),
]

_GRAPH_CASES = [
    _case(f"chat_graph/{label}", build, _parse("chat_graph"))
    for label, build in [
        ("a parent chain", lambda n: _graph(_chain(n))),
        ("a parent chain, children first", lambda n: _graph(_chain(n, reverse=True))),
        ("siblings", lambda n: _graph([_node("r", None)] + [_node(f"n{i}", "r", "assistant") for i in range(n)])),
        ("missing parents", lambda n: _graph([_node(f"n{i}", f"gone{i}") for i in range(n)])),
        ("one long cycle", lambda n: _graph([_node(f"n{i}", f"n{(i + 1) % n}") for i in range(n)])),
        ("duplicate node ids", lambda n: _graph([_node("n", None)] * n)),
        ("opening think tags", lambda n: _graph([_node("r", None), _node("a", "r", "assistant", "<think>" * n)])),
        (
            "tool calls and results",
            lambda n: _graph(
                [_node("r", None)]
                + [
                    node
                    for i in range(n)
                    for node in (
                        _node(f"a{i}", "r" if i == 0 else f"t{i - 1}", "assistant", "", tool_calls=[_call(f"c{i}")]),
                        _node(f"t{i}", f"a{i}", "tool", "ok", tool_call_id=f"c{i}"),
                    )
                ]
            ),
        ),
        (
            "injections of malformed ids",
            lambda n: _graph(
                [_node("r", None)]
                + [
                    _node(
                        f"a{i}",
                        "r" if i == 0 else f"a{i - 1}",
                        "assistant",
                        "",
                        tool_calls=[_call(f"c{i}", "inject_airalogy_protocols", '{"ids": ["bad"]}')],
                    )
                    for i in range(n)
                ]
            ),
        ),
    ]
]

_CHATGPT_CASES = [
    _case(f"chatgpt_export/{label}", build, _parse("chatgpt_export"))
    for label, build in [
        ("a parent chain", lambda n: _chatgpt_chain(n)),
        ("a parent chain, children first", lambda n: _chatgpt_chain(n, reverse=True)),
        (
            "nodes without messages",
            lambda n: _chatgpt(
                [
                    {"id": f"e{i}", "message": None, "parent": f"e{i - 1}" if i else None, "children": []}
                    for i in range(n)
                ]
                + [_chatgpt_node("m", f"e{n - 1}")]
            ),
        ),
        ("tool messages in one turn", _tool_turn),
        ("calls to many tools, then their results", _recipients),
        ("metadata tool calls with malformed ids", _metadata_calls),
        ("a conversations.json of one", lambda n: [_chatgpt_chain(n)]),
        (
            "thoughts",
            lambda n: _chatgpt(
                [
                    {
                        "id": "t",
                        "parent": None,
                        "children": [],
                        "message": {
                            "id": "t",
                            "author": {"role": "assistant"},
                            "content": {"content_type": "thoughts", "thoughts": [{"summary": "s", "content": "c"}] * n},
                        },
                    }
                ]
            ),
        ),
    ]
] + [
    _case(
        "chatgpt_export/message feedback",
        lambda n: [{"conversation_id": "c", "message_id": "m1", "rating": "thumbsUp", "content": '{"text": "y"}'}] * n,
        _apply_feedback,
    ),
]

_WEBUI_REASONING = '<details type="reasoning" done="true">'
_WEBUI_CASES = [
    _case(f"openwebui/{label}", build, _parse("openwebui"))
    for label, build in [
        ("opening reasoning tags", lambda n: _webui_reply(_WEBUI_REASONING * n)),
        ("opening reasoning tags cut off", lambda n: _webui_reply('<details type="reasoning"' * n)),
        ("closing tags", lambda n: _webui_reply("</details>" * n)),
        ("openings then line closings", lambda n: _webui_reply(_WEBUI_REASONING * n + "\n</details>" * n)),
        ("blocks", lambda n: _webui_reply((_WEBUI_REASONING + "\n<summary>s</summary>\n> a\n</details>\n") * n)),
        ("blocks closed mid-line", lambda n: _webui_reply((_WEBUI_REASONING + "a</details>") * n)),
        ("escaped quote lines", lambda n: _webui_reply(_WEBUI_REASONING + "\n" + "&gt; a\n" * n + "</details>")),
        ("a parent chain", lambda n: _webui_chain(n)),
        ("a parent chain, children first", lambda n: _webui_chain(n, reverse=True)),
        ("missing parents", lambda n: _webui([_webui_message(f"w{i}", f"gone{i}") for i in range(n)])),
        ("one long cycle", lambda n: _webui([_webui_message(f"w{i}", f"w{(i + 1) % n}") for i in range(n)])),
        (
            "ratings",
            lambda n: _webui(
                [
                    _webui_message(f"w{i}", f"w{i - 1}" if i else None, annotation={"rating": 1, "comment": "c"})
                    for i in range(n)
                ]
            ),
        ),
        (
            "tool calls and results",
            lambda n: _webui(
                [_webui_message("u", None)]
                + [
                    message
                    for i in range(n)
                    for message in (
                        _webui_message(
                            f"a{i}", "u" if i == 0 else f"t{i - 1}", "assistant", "", tool_calls=[_call(f"c{i}")]
                        ),
                        _webui_message(f"t{i}", f"a{i}", "tool", "ok", tool_call_id=f"c{i}"),
                    )
                ]
            ),
        ),
        ("an export of one", lambda n: [_webui_chain(n)]),
    ]
]

_COUNT_CASES = [
    _case(f"count_array_items/{label}", build, lambda body: strict_json.count_array_items(body, stop_after=BIG))
    for label, build in [
        ("items", lambda n: _fill(b"0,", n, b"[", b"0]")),
        ("strings of delimiters", lambda n: b'["' + b",[]{}" * n + b'"]'),
        ("escaped quotes", lambda n: b'["' + b'\\"' * n + b'"]'),
        ("escaped backslashes", lambda n: b'["' + b"\\\\" * n + b'"]'),
        ("short strings", lambda n: _fill(b'"",', n)),
        ("a string never closed", lambda n: b'["' + b"a" * n),
        ("opening brackets", lambda n: b"[" * n),
        ("closing brackets", lambda n: _fill(b"]", n)),
        ("containers two deep", lambda n: _fill(b"[[]],", n)),
        ("containers four deep", lambda n: _fill(b"[[[[]]]],", n)),
        ("containers nine deep", lambda n: _fill(b"[" * 9 + b"]" * 9 + b",", n)),
        ("chains 900 deep", lambda n: _fill(b"[" * 900 + b"]" * 900 + b",", n)),
        ("chains of items 900 deep", lambda n: _fill(b"[1," * 900 + b"]" * 900 + b",", n)),
        ("objects", lambda n: _fill(b'{"a":{"b":[1]}},', n)),
        ("commas", lambda n: _fill(b",", n, b"[")),
    ]
] + [
    _case(f"count_lines/{label}", build, lambda body: strict_json.count_lines(body, stop_after=BIG))
    for label, build in [
        ("short lines", lambda n: b"x\n" * n),
        ("blank lines", lambda n: b" \n" * n),
        ("carriage returns", lambda n: b"x\r" * n),
        ("spaces", lambda n: b" " * n + b"x"),
    ]
]

CASES: tuple[Case, ...] = tuple(
    _THINK_CASES
    + _ARGUMENT_CASES
    + _ID_CASES
    + _OPENAI_CASES
    + _INJECTION_CASES
    + _WRAPPER_CASES
    + _GRAPH_CASES
    + _CHATGPT_CASES
    + _WEBUI_CASES
    + _COUNT_CASES
)
assert len({case.name for case in CASES}) == len(CASES)
