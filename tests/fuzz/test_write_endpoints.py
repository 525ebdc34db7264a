"""Every write endpoint, API and pages, fed hostile values at every leaf of a body it accepts: never a 5xx, and a
refused request (4xx) changes nothing.

The routes come from the URL configuration through the permission matrix (`tests/security/permission_matrix.py`):
every URL pattern outside the admin with a write method (POST, PUT, PATCH, DELETE) that some principal may use,
called as that principal, starting from the body the matrix sends it. A new endpoint therefore joins by having its
rows in the matrix, which `tests/security/test_permission_completeness.py` demands; `test_every_write_route_is_fuzzed`
checks that every one of them is here. The API's request schemas (OpenAPI) add the fields the matrix's body leaves
out, each with a hostile value of its type.

Each example replaces some leaves of the body (a JSON value's strings, numbers and keys, a form's fields) with:
NUL, lone surrogates, deep nesting, huge strings, digits of other scripts in integer fields (``²``, ``①``, ``፩``),
and the same inside JSON held in text (a tool call's ``arguments``). Forms are posted as raw bytes, so that a lone
surrogate reaches the site as the bytes a hostile client would send. Each example runs in a savepoint that is rolled
back; the row counts and contents the matrix compares (`state`), and the audit log's length, must be unchanged by a
4xx. ``FUZZ_EXAMPLES`` sets the examples per route (tests/fuzz/conftest.py).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from django.core.cache import cache
from django.db import transaction
from django.http import HttpResponseBase
from hypothesis import given, settings
from hypothesis import strategies as st

from chats.models import AuditEvent
from tests.security.permission_matrix import (
    LOGIN,
    Body,
    JsonBody,
    Principal,
    World,
    build_targets,
    build_world,
    state,
)
from tests.security.test_permission_completeness import feature_modules

pytestmark = pytest.mark.django_db

WRITES = settings.get_profile("fuzz-writes")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# Who is tried first when several principals may write: the one who may do most.
PREFERENCE = ("superuser", "reviewer", "source_a_key", "auditor", "other_reviewer", "staff", "no_role", "anonymous")

# Hostile text: NUL, lone surrogates (both halves, and half a pair), bidi and byte order marks, JSON-ish text.
HOSTILE_TEXT = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfff",
    "\ud83d",
    "\ufeff\u202e",
    '{"a": "\\u0000"}',
    '{"a": "\\ud800"}',
    "[" * 2000,
    "x" * 70_000,
]
# Digits that str.isdigit() accepts and int() refuses, or that int() reads though they are not ASCII.
OTHER_DIGITS = ["²", "①", "፩", "١٢", "\uff11\uff12", "1_000", "12.0", "9" * 40, "-0", " 1"]


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


# Nesting too deep for Python's own JSON encoder: a marker, written out as raw text by `_json_bytes`.
VERY_DEEP = "\x1bvery deep\x1b"
HOSTILE_JSON = [*HOSTILE_TEXT, *OTHER_DIGITS, _deep(150), VERY_DEEP, 2**70, -(2**70), 1e308, {"\x00": 1}, {"\ud800": 1}]


# --------------------------------------------------------------------------------------------------------------
# The routes


def _success(outcome: Any) -> bool:
    return (isinstance(outcome, int) and 200 <= outcome < 400) or (
        isinstance(outcome, str) and outcome.startswith("302") and outcome != LOGIN and "/admin/login/" not in outcome
    )


def write_routes() -> dict[tuple[str, str], str]:
    """(URL key, method) -> the principal who may write there, for every write route outside the admin."""
    routes = {}
    for expected in feature_modules().values():
        for key, methods in expected.items():
            if key.startswith("admin:") or key.startswith("admin/"):
                continue
            for method, outcomes in methods.items():
                if method not in WRITE_METHODS:
                    continue
                allowed = [name for name in PREFERENCE if _success(outcomes.get(name))]
                if allowed:
                    routes[(key, method)] = allowed[0]
    return routes


ROUTES = write_routes()

# Bodies that reach deeper than the matrix's: JSON held in text (a tool call's arguments).
TOOL_CALL_DOCUMENT = {
    "conversation_id": "fuzz-tools",
    "chat_history": [
        {"role": "user", "content": "Find PCR protocols."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": json.dumps({"query": "pcr", "limit": 3})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
    ],
}
EXTRA_BODIES: dict[tuple[str, str], list[Body]] = {
    ("api:ingest", "POST"): [JsonBody(TOOL_CALL_DOCUMENT)],
    ("api:ingest-bulk", "POST"): [JsonBody([TOOL_CALL_DOCUMENT, {**TOOL_CALL_DOCUMENT, "conversation_id": "b"}])],
}


# --------------------------------------------------------------------------------------------------------------
# The request schemas


def _schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)  # type: ignore[no-any-return]


def _resolve(schema: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = schema["components"]["schemas"][name]
    return node


def schema_fields(schema: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    """The request body's top-level properties (name -> JSON schema) of the operation serving ``path``."""
    for template, operations in schema["paths"].items():
        pattern = re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, path.split("?", 1)[0]) and method.lower() in operations:
            content = operations[method.lower()].get("requestBody", {}).get("content", {})
            body = _resolve(schema, content.get("application/json", {}).get("schema"))
            if isinstance(body, dict):
                return {name: _resolve(schema, prop) for name, prop in body.get("properties", {}).items()}
    return {}


def _hostile_for(field: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = field.get("type") if isinstance(field, dict) else None
    if kind == "integer":
        return st.sampled_from([*OTHER_DIGITS, 2**70, "²"])
    if kind in ("object", "array"):
        return st.sampled_from([_deep(150), {"\x00": "x"}, ["\ud800"], {"k": "a\x00b"}])
    return st.sampled_from(HOSTILE_JSON)


# --------------------------------------------------------------------------------------------------------------
# Mutating a body


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [path] + [leaf for key, child in value.items() for leaf in _leaves(child, (*path, key))]
    if isinstance(value, list):
        return [path] + [leaf for index, child in enumerate(value) for leaf in _leaves(child, (*path, index))]
    return [path]


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


def _reachable(value: Any, path: tuple[Any, ...]) -> bool:
    for step in path:
        if not isinstance(value, dict | list) or isinstance(value, list) is not isinstance(step, int):
            return False
        try:
            value = value[step]
        except (KeyError, IndexError):
            return False
    return True


def _json_in_text(text: str) -> Any:
    if not text.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


@st.composite
def mutated_json(draw: st.DrawFn, value: Any, fields: dict[str, Any]) -> Any:
    """``value`` with some leaves (and keys) hostile, JSON held in its strings included, and schema fields added."""
    leaves = _leaves(value)
    for path in draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=3, unique=True)):
        if not _reachable(value, path):  # an earlier replacement took this leaf's parent away
            continue
        current: Any = value
        for step in path:
            current = current[step]
        inner = _json_in_text(current) if isinstance(current, str) else None
        if inner is not None and draw(st.booleans()):
            # Hostile inside the JSON text, and the text written back as a client would send it.
            mutated = draw(mutated_json(inner, {}))
            replacement: Any = json.dumps(mutated)
        elif isinstance(current, int | float) and not isinstance(current, bool):
            replacement = draw(st.sampled_from([*OTHER_DIGITS, 2**70, 1e308]))
        elif isinstance(current, dict) and draw(st.booleans()):
            replacement = {**current, draw(st.sampled_from(HOSTILE_TEXT[:6])): draw(st.sampled_from(HOSTILE_JSON))}
        else:
            replacement = draw(st.sampled_from(HOSTILE_JSON))
        value = _replace(value, path, replacement)
    if fields and isinstance(value, dict) and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(fields)))
        value = {**value, name: draw(_hostile_for(fields[name]))}
    return value


def _pairs(form: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, item) for name, value in form.items() for item in (value if isinstance(value, list) else [value])]


@st.composite
def mutated_form(draw: st.DrawFn, form: dict[str, Any]) -> list[tuple[str, str]]:
    """A form's fields (name, value) with some values hostile, and perhaps a hostile extra field."""
    pairs = list(_pairs(form))
    if not pairs:
        pairs = [("next", "/")]
    for index in draw(st.lists(st.integers(0, len(pairs) - 1), min_size=1, max_size=3, unique=True)):
        name, current = pairs[index]
        digits = str(current).lstrip("-").isascii() and str(current).lstrip("-").isdecimal()
        pool = OTHER_DIGITS + HOSTILE_TEXT[:6] if digits else HOSTILE_TEXT + OTHER_DIGITS
        pairs[index] = (name, draw(st.sampled_from(pool)))
    if draw(st.booleans()):
        pairs.append((draw(st.sampled_from([name for name, _ in pairs])), draw(st.sampled_from(HOSTILE_TEXT[:6]))))
    return pairs


def _form_bytes(pairs: list[tuple[str, str]]) -> bytes:
    """URL-encoded as a hostile client may: a lone surrogate becomes the UTF-8-like bytes it would take."""
    encode = lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")  # noqa: E731
    return "&".join(f"{encode(name)}={encode(value)}" for name, value in pairs).encode()


def _json_bytes(value: Any) -> bytes:
    text = json.dumps(value)  # ensure_ascii: a lone surrogate goes as its \ud800 escape
    return text.replace(json.dumps(VERY_DEEP), "[" * 5000 + "]" * 5000).encode()


# --------------------------------------------------------------------------------------------------------------
# Sending, and what must hold


def _send(principal: Principal, method: str, path: str, body: bytes, content_type: str) -> HttpResponseBase:
    from http.cookies import SimpleCookie

    client = principal.client
    client.raise_request_exception = False  # an exception is the 500 a client would get, reported with its request
    client.cookies = SimpleCookie(principal.cookies)
    response = client.generic(method, path, data=body, content_type=content_type)
    if response.streaming:
        b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return response


# What a refused request may still leave behind by design: a rejected document's receipt (its readable record),
# and a sign-in attempt's count.
MAY_CHANGE_WHEN_REFUSED = {"receipts", "sign-in attempts"}


def _snapshot() -> dict[str, Any]:
    current = state()
    for name in MAY_CHANGE_WHEN_REFUSED:
        current.pop(name, None)
    current["audit events"] = AuditEvent.objects.exclude(action__startswith="ingest.").count()
    return current


def _strategy(key: str, method: str, world: World, targets: dict[str, Any], schema: dict[str, Any]) -> Any:
    target = targets[key]
    base = target.bodies.get(method)
    path_choices = st.sampled_from(target.paths)
    bodies: list[Body] = [base if base is not None else {}, *EXTRA_BODIES.get((key, method), [])]
    strategies = []
    for body in bodies:
        if isinstance(body, JsonBody):
            fields = schema_fields(schema, method, target.paths[0])
            strategies.append(
                st.tuples(path_choices, mutated_json(body.value, fields).map(_json_bytes), st.just(body.content_type))
            )
        else:
            strategies.append(
                st.tuples(
                    path_choices,
                    mutated_form(body).map(_form_bytes),
                    st.just("application/x-www-form-urlencoded"),
                )
            )
    return st.one_of(strategies)


@pytest.fixture
def world(db: None) -> World:
    return build_world()


@pytest.fixture(scope="module")
def api_schema() -> dict[str, Any]:
    return _schema()


@pytest.mark.parametrize(("key", "method"), sorted(ROUTES), ids=[f"{m} {k}" for k, m in sorted(ROUTES)])
def test_hostile_values_at_every_leaf_are_never_a_server_error_and_a_refusal_changes_nothing(
    key: str, method: str, world: World, api_schema: dict[str, Any]
) -> None:
    principal = world.principals[ROUTES[(key, method)]]
    targets = build_targets(world)
    before = _snapshot()
    problems: list[str] = []

    # The body the matrix sends, unchanged, gets through: the hostile examples below are refused for what they
    # hold, not for a missing token or permission.
    target = targets[key]
    base = target.bodies.get(method)
    if isinstance(base, JsonBody):
        plain = (_json_bytes(base.value), base.content_type)
    else:
        plain = (_form_bytes(_pairs(base or {})), "application/x-www-form-urlencoded")
    cache.clear()
    with transaction.atomic():
        status = _send(principal, method, target.paths[0], *plain).status_code
        transaction.set_rollback(True)
    assert status < 400, f"{method} {target.paths[0]} with the matrix's body answered {status}"

    @WRITES
    @given(request=_strategy(key, method, world, targets, api_schema))
    def answers_without_a_server_error(request: tuple[str, bytes, str]) -> None:
        path, body, content_type = request
        cache.clear()  # throttles count in the cache
        with transaction.atomic():
            try:
                response = _send(principal, method, path, body, content_type)
                status = response.status_code
                if status >= 500:
                    problems.append(f"{method} {path} {content_type} {body[:1500]!r} -> {status}")
                elif 400 <= status < 500 and _snapshot() != before:
                    problems.append(f"{method} {path} {body[:300]!r} -> {status} but changed the database")
            finally:
                transaction.set_rollback(True)
        assert not problems, problems[-1]

    answers_without_a_server_error()


def test_every_write_route_is_fuzzed(world: World) -> None:
    """Every write route outside the admin that someone may use has a body to start from (or takes none)."""
    targets = build_targets(world)
    assert ROUTES, "no write routes found"
    missing = [f"{method} {key}" for key, method in ROUTES if key not in targets]
    assert missing == []
    # Each API write of the schema is one of the routes.
    schema = _schema()
    api_writes = {
        (method.upper(), template)
        for template, operations in schema["paths"].items()
        for method in operations
        if method.upper() in WRITE_METHODS
    }
    covered = set()
    for key, method in ROUTES:
        for path in targets[key].paths:
            for template in schema["paths"]:
                pattern = re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template))
                if re.fullmatch(pattern, path.split("?", 1)[0]):
                    covered.add((method, template))
    assert api_writes <= covered, api_writes - covered
