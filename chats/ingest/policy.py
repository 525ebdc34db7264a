"""What the model was given, and was it allowed: a Record QA ``context`` block against the injections made.

The ``context`` block is the backend's statement of what may be injected: per kind, ``enabled`` and a list of ids
(``{"inject_airalogy_protocols": {"enabled": true, "airalogy_protocol_ids": [...]}, ...}``). ``read_context``
parses it once into an ``InjectionPolicy``; ``policy_verdicts`` compares that with the injected artifacts and
decides, in one place for every path (the planner at ingestion, the migration that filled in older
conversations):

- each injected artifact's verdict: ``permitted`` (its kind is enabled and its id is listed, or the kind lists no
  id), ``kind_not_enabled`` (``enabled`` is not ``true``, or the context does not name the kind at all) or
  ``not_listed`` (the kind lists ids, and not this one);
- each id the context lists: ``used`` (injected and resolved), ``requested_unresolved`` (requested, never
  resolved) or ``unused``; its well-formedness by the rule that judges injected ids (``id_well_formed``);
- the conversation is a policy violation when any injection was not permitted.

A conversation without a context block has no verdicts at all (``None``): nothing was stated.

A context key is read as the tool it names (``injection_kind``): ``inject_airalogy_protocols`` governs every
protocol injection (``recommend_airalogy_protocols`` included), and a kind with no key of its own (an uploaded
file, say) is not enabled. Two keys naming one kind are read together: the kind is enabled when either enables
it, and their lists are joined. ``enabled`` must be the JSON ``true``: anything else states no permission.

Pure Python, like the parsers: no Django, no database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from chats.formats.canonical import Issue
from chats.ingest.common import pointer
from chats.ingest.injections import id_well_formed, injection_kind, is_id_list_key

# An injected artifact's verdict.
PERMITTED = "permitted"
KIND_NOT_ENABLED = "kind_not_enabled"
NOT_LISTED = "not_listed"
VERDICTS = (PERMITTED, KIND_NOT_ENABLED, NOT_LISTED)

# What became of an id the context lists.
USED = "used"
REQUESTED_UNRESOLVED = "requested_unresolved"
UNUSED = "unused"
CONTEXT_ID_STATES = (USED, REQUESTED_UNRESOLVED, UNUSED)


class Injected(Protocol):
    """An injected artifact, as far as the policy looks at it (a parsed ``Artifact``, a stored one)."""

    @property
    def kind(self) -> str: ...
    @property
    def artifact_id(self) -> str: ...
    @property
    def requested(self) -> bool: ...
    @property
    def resolved(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class KindPolicy:
    enabled: bool
    listed: frozenset[str]
    restricted: bool  # the kind lists ids (even only unusable ones): an id must then be among them


@dataclass(frozen=True, slots=True)
class ListedId:
    kind: str
    artifact_id: str
    id_well_formed: bool


@dataclass(frozen=True, slots=True)
class InjectionPolicy:
    """A context block, parsed: what each kind may inject, every id listed (once, in order), and the warnings."""

    kinds: dict[str, KindPolicy]
    listed: tuple[ListedId, ...]
    issues: tuple[Issue, ...]


@dataclass(frozen=True, slots=True)
class ContextId:
    """An id the context lists, and what became of it."""

    kind: str
    artifact_id: str
    id_well_formed: bool
    state: str  # one of CONTEXT_ID_STATES


@dataclass(frozen=True, slots=True)
class Verdicts:
    artifacts: tuple[str, ...]  # one per injection given, in the same order
    context_ids: tuple[ContextId, ...]

    @property
    def violation(self) -> bool:
        return any(verdict != PERMITTED for verdict in self.artifacts)


def read_context(context: object, path: str = "/context") -> InjectionPolicy | None:
    """The policy a context block states (``path`` locates it, for the warnings); None when there is none."""
    if context is None:
        return None
    enabled: dict[str, bool] = {}
    listed: dict[str, set[str]] = {}
    restricted: dict[str, bool] = {}
    ids: dict[tuple[str, str], ListedId] = {}
    issues: list[Issue] = []
    for key, setting in context.items() if isinstance(context, dict) else ():
        kind = injection_kind(key)
        if kind is None:
            continue  # not an injection setting
        enabled[kind] = enabled.get(kind, False) or (isinstance(setting, dict) and setting.get("enabled") is True)
        listed.setdefault(kind, set())
        restricted.setdefault(kind, False)
        for list_key, value in setting.items() if isinstance(setting, dict) else ():
            if not is_id_list_key(list_key) or value is None:
                continue
            in_list = isinstance(value, list)
            for index, artifact_id in enumerate(value if in_list else [value]):
                item_path = pointer(path, key, list_key, index) if in_list else pointer(path, key, list_key)
                restricted[kind] = True
                if not isinstance(artifact_id, str) or not artifact_id:
                    issues.append(Issue(item_path, f"listed artifact id {artifact_id!r} is not a string; ignored"))
                    continue
                listed[kind].add(artifact_id)
                if (kind, artifact_id) not in ids:
                    well_formed = id_well_formed(kind, artifact_id)
                    ids[(kind, artifact_id)] = ListedId(kind, artifact_id, well_formed)
                    if not well_formed:
                        issues.append(Issue(item_path, f"'{artifact_id}' is not a well-formed {kind} id"))
    kinds = {
        kind: KindPolicy(enabled=enabled[kind], listed=frozenset(listed[kind]), restricted=restricted[kind])
        for kind in enabled
    }
    return InjectionPolicy(kinds=kinds, listed=tuple(ids.values()), issues=tuple(issues))


def verdict(policy: InjectionPolicy, injected: Injected) -> str:
    """One injected artifact's verdict under a policy."""
    kind = policy.kinds.get(injected.kind)
    if kind is None or not kind.enabled:
        return KIND_NOT_ENABLED
    if kind.restricted and injected.artifact_id not in kind.listed:
        return NOT_LISTED
    return PERMITTED


def policy_verdicts(policy: InjectionPolicy | None, injections: Sequence[Injected]) -> Verdicts | None:
    """Every injection's verdict and every listed id's state; None when there is no context (no policy)."""
    if policy is None:
        return None
    resolved: set[tuple[str, str]] = set()
    requested: set[tuple[str, str]] = set()
    for injected in injections:
        if injected.resolved:
            resolved.add((injected.kind, injected.artifact_id))
        if injected.requested:
            requested.add((injected.kind, injected.artifact_id))
    context_ids = []
    for item in policy.listed:
        key = (item.kind, item.artifact_id)
        state = USED if key in resolved else REQUESTED_UNRESOLVED if key in requested else UNUSED
        context_ids.append(ContextId(item.kind, item.artifact_id, item.id_well_formed, state))
    return Verdicts(
        artifacts=tuple(verdict(policy, injected) for injected in injections), context_ids=tuple(context_ids)
    )
