"""The planner's artifacts: the injected artifacts a document adds or resolves, and their policy verdicts under
the injection context in force (``chats.ingest.policy``). Pure functions over plain data (``chats.ingest.plans``),
called by ``chats.ingest.planner``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from chats.formats import canonical as c
from chats.ingest import policy
from chats.ingest.plans import NAME_LIMIT, ArtifactRow, CallRow, Stored, StoredArtifact, new_index


def plan_artifacts(
    parsed: c.Conversation, stored: Stored | None, call_ref_by_id: dict[str, int], calls: list[CallRow]
) -> tuple[list[ArtifactRow], dict[int, Any]]:
    """The artifacts the document injects that are not stored yet (one row per call and artifact id), and the
    stored ones whose result arrived now (stored artifact -> what it resolved to)."""
    existing = {(a.call_id, a.artifact_id): a for a in stored.artifacts} if stored is not None else {}
    call_message = {call.pk: call.message for call in stored.calls} if stored is not None else {}
    rows: list[ArtifactRow] = []
    resolved: dict[int, Any] = {}
    planned: set[tuple[int, str]] = set()
    for artifact in parsed.artifacts:
        call_ref = call_ref_by_id.get(artifact.tool_call_id)
        if call_ref is None or not (artifact.requested or artifact.resolved):
            continue
        found = existing.get((artifact.tool_call_id, artifact.artifact_id))
        if found is not None:
            if artifact.resolved and not found.resolved:
                # The result arrived after the call was stored: record what it resolved to.
                resolved[found.pk] = artifact.payload
            continue
        if (call_ref, artifact.artifact_id) in planned:
            continue
        planned.add((call_ref, artifact.artifact_id))
        message = calls[new_index(call_ref)].message if call_ref < 0 else call_message[call_ref]
        rows.append(
            ArtifactRow(message=message, call=call_ref, artifact=artifact, tool_name=artifact.tool_name[:NAME_LIMIT])
        )
    return rows, resolved


def plan_policy(
    stored: Stored | None, context: object, context_changed: bool, rows: list[ArtifactRow], resolved: dict[int, Any]
) -> tuple[dict[int, str | None], list[policy.ContextId] | None, bool | None]:
    """The policy verdicts of every artifact of the conversation (stored and new) under the context in force,
    and the state of every id it lists: (changed verdicts of stored artifacts, the listed ids when they may have
    changed, whether the conversation is a policy violation). The new rows get their verdicts.

    The listed ids follow from the context and the injections alone: they are given again (to replace the
    stored ones) when either changed, so the stored ones need not be read."""
    stored_artifacts: list[StoredArtifact] = stored.artifacts if stored is not None else []
    injections: list[policy.Injected] = [
        dataclasses.replace(a, resolved=True) if a.pk in resolved else a for a in stored_artifacts
    ]
    injections.extend(row.artifact for row in rows)
    decided = policy.policy_verdicts(policy.read_context(context), injections)
    verdicts: tuple[str | None, ...] = decided.artifacts if decided is not None else (None,) * len(injections)
    for row, verdict in zip(rows, verdicts[len(stored_artifacts) :], strict=True):
        row.verdict = verdict
    changed = {a.pk: verdict for a, verdict in zip(stored_artifacts, verdicts, strict=False) if a.verdict != verdict}
    listed = list(decided.context_ids) if decided is not None else []
    had_context = stored is not None and stored.summary.get("policy_violation") is not None
    context_ids: list[policy.ContextId] | None = None
    if (listed or had_context) and (stored is None or context_changed or rows or resolved):
        context_ids = listed
    return changed, context_ids, decided.violation if decided is not None else None
