"""Research artifacts (protocols, records, discussions, files) injected into a conversation by tool calls.

An injection is an assistant tool call such as ``inject_airalogy_protocols`` whose arguments name the ids
wanted and whose answering tool message holds the resolved items as JSON. Each distinct id of a call becomes
one Artifact, flagged as requested, resolved or both. Ids are kept exactly as given: they are never split on
"." (versions contain dots), and a malformed one is a warning, never an error.
"""

from __future__ import annotations

import re

from chats.formats.canonical import Artifact, Issue, Message, ToolCall
from chats.ingest.common import json_in_text
from chats.json_types import JSONMapping, JSONObject

_INJECT_PREFIX = "inject_airalogy_"
_UPLOADED_FILE = re.compile(r"processing_user_uploaded_\w+_file")
_KIND_BY_SUBJECT = {
    "protocols": "protocol",
    "protocol": "protocol",
    "records": "record",
    "record": "record",
    "discussions": "discussion",
    "discussion": "discussion",
    "files": "file",
    "file": "file",
}

_SNAKE = r"[a-z0-9]+(?:_[a-z0-9]+)*"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ID_PATTERNS = {
    "protocol": re.compile(
        rf"airalogy\.id\.(?:lab\.{_SNAKE}\.project\.{_SNAKE}\.protocol\.{_SNAKE}\.v\.\d+\.\d+\.\d+"
        rf"|protocol\.{_UUID}(?:\.v\.\d+(?:\.\d+)*)?)"
    ),
    "record": re.compile(rf"airalogy\.id\.record\.{_UUID}(?:\.v\.\d+)?"),
    "discussion": re.compile(rf"airalogy\.id\.discussion\.{_UUID}"),
    "file": re.compile(rf"airalogy\.id\.file\.{_UUID}\.[A-Za-z0-9]+"),
}


def injection_kind(tool_name: str) -> str | None:
    """The artifact kind a tool injects, or None when the tool is not an injection."""
    if tool_name.startswith(_INJECT_PREFIX):
        return _KIND_BY_SUBJECT.get(tool_name[len(_INJECT_PREFIX) :], "other")
    if tool_name == "recommend_airalogy_protocols":
        return "protocol"
    if _UPLOADED_FILE.fullmatch(tool_name):
        return "file"
    return None


def id_well_formed(kind: str, artifact_id: str) -> bool:
    pattern = _ID_PATTERNS.get(kind)
    # Kinds without a documented id scheme cannot be malformed.
    return pattern is None or pattern.fullmatch(artifact_id) is not None


def extract_artifacts(messages: list[Message]) -> tuple[list[Artifact], list[Issue]]:
    """The artifacts injected by the tool calls of ``messages`` (results found by tool_call_id); warnings."""
    results: dict[str, Message] = {}
    for message in messages:
        if message.tool_call_id:
            results.setdefault(message.tool_call_id, message)
    artifacts: list[Artifact] = []
    warnings: list[Issue] = []
    for message in messages:
        for call in message.tool_calls:
            kind = injection_kind(call.name)
            if kind is not None:
                # A result answers one call: the first that has its id. A later call reusing the id (which the
                # parser warns about) gets none; otherwise every such call would decode the same result again and
                # hold all of its items, and a body of both would cost its size squared.
                result = results.pop(call.call_id, None)
                artifacts.extend(_call_artifacts(message, call, kind, result, warnings))
    return artifacts, warnings


def _call_artifacts(
    message: Message, call: ToolCall, kind: str, result: Message | None, warnings: list[Issue]
) -> list[Artifact]:
    call_path = (
        f"{message.source_path}/function_call"
        if call.type == "function_call"
        else f"{message.source_path}/tool_calls/{call.index}"
    )
    by_id: dict[str, Artifact] = {}
    for artifact_id in _requested_ids(call.parsed_arguments, call_path, warnings):
        if artifact_id not in by_id:
            by_id[artifact_id] = _artifact(kind, artifact_id, message, call, requested=True)
            _check_id(by_id[artifact_id], call_path, warnings)
    if result is not None:
        result_path = f"{result.source_path}/content"
        for item in _resolved_items(result, kind, result_path, warnings):
            item_id = _item_id(item, kind)
            if item_id is None:
                warnings.append(Issue(result_path, f"a resolved {kind} has no id; it is not recorded as an artifact"))
                continue
            artifact = by_id.get(item_id)
            if artifact is None:
                artifact = by_id[item_id] = _artifact(kind, item_id, message, call, requested=False)
                _check_id(artifact, result_path, warnings)
            if not artifact.resolved:
                artifact.resolved = True
                artifact.payload = item
    return list(by_id.values())


def _artifact(kind: str, artifact_id: str, message: Message, call: ToolCall, *, requested: bool) -> Artifact:
    return Artifact(
        kind=kind,
        artifact_id=artifact_id,
        id_well_formed=id_well_formed(kind, artifact_id),
        tool_call_id=call.call_id,
        message_key=message.key,
        tool_name=call.name,
        requested=requested,
        resolved=False,
    )


def _check_id(artifact: Artifact, path: str, warnings: list[Issue]) -> None:
    if not artifact.id_well_formed:
        warnings.append(Issue(path, f"'{artifact.artifact_id}' is not a well-formed {artifact.kind} id"))


def is_id_list_key(key: str) -> bool:
    return key == "ids" or key.endswith("_ids")


def _is_single_id_key(key: str) -> bool:
    # Not every "*_id" argument names an artifact (chat_id, user_id...): only these do.
    return key in ("id", "file_id") or (key.startswith("airalogy_") and key.endswith("_id"))


def _requested_ids(arguments: object, path: str, warnings: list[Issue]) -> list[str]:
    """The ids named in a call's decoded arguments: lists under "*_ids" keys, single "airalogy_*_id"s."""
    if isinstance(arguments, list):
        candidates: list[object] = arguments
    elif isinstance(arguments, dict):
        candidates = []
        for key, value in arguments.items():
            if is_id_list_key(key):
                candidates.extend(value if isinstance(value, list) else [value])
            elif _is_single_id_key(key):
                candidates.append(value)
    else:
        return []
    ids = []
    for candidate in candidates:
        if isinstance(candidate, str) and candidate:
            ids.append(candidate)
        else:
            warnings.append(Issue(path, f"requested artifact id {candidate!r} is not a string; ignored"))
    return ids


def _resolved_items(result: Message, kind: str, path: str, warnings: list[Issue]) -> list[JSONObject]:
    """The items of an injection result: a JSON object holding lists of items, a bare list, or one item."""
    # Strict, and storable: the items are stored as JSON (the result's text is kept as it came either way).
    decoded, error, unstored = json_in_text(result.text)
    if error or unstored:
        why = f"is not JSON ({error})" if error else f"is JSON, but {unstored}"
        warnings.append(Issue(path, f"injection result {why}; artifacts come from the arguments only"))
        return []
    if isinstance(decoded, list):
        return [item for item in decoded if isinstance(item, dict)]
    if not isinstance(decoded, dict):
        return []
    if _item_id(decoded, kind) is not None:
        return [decoded]
    items: list[JSONObject] = []
    for value in decoded.values():
        if isinstance(value, list):
            items.extend(item for item in value if isinstance(item, dict))
    return items


def _item_id(item: JSONMapping, kind: str) -> str | None:
    """An item's id: ``airalogy_<kind>_id`` first (a record item also names its protocol), then ``id``.

    Only for an unknown kind is any ``airalogy_*_id`` taken, since its own key cannot be known.
    """
    for key in (f"airalogy_{kind}_id", "id", "file_id"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return value
    if kind == "other":
        for key, value in item.items():
            if key.startswith("airalogy_") and key.endswith("_id") and isinstance(value, str) and value:
                return value
    return None
