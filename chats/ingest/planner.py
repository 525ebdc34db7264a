"""What a parsed document means against what is stored: the one place where ingestion decides.

``plan_document(parsed, stored)`` is a pure function. It takes a parsed document and a snapshot of the stored
conversation it belongs to (``None`` when there is none yet) and returns a ``Plan``: the rows to insert, the rows to
change, the conversation's new summary, the policy verdicts of its injections (``chats.ingest.policy``), the
warnings and the outcome. Column limits (``chats.ingest.plans``) are applied here, once. The injected artifacts with
their policy verdicts (``chats.ingest.plan_artifacts``) and the feedback that came with the data
(``chats.ingest.plan_feedback``) are planned by the pure functions of sibling modules, called from here. The writers
(``chats.services.plan_writer`` row by row through the ORM, ``chats.services.bulk_writer`` by COPY for a batch) only
carry plans out, so a document means the same thing however it arrives.

Its inputs and outputs are plain data (``chats.ingest.plans``); which conversation a document belongs to is decided
just as purely by ``chats.ingest.identity``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from chats.formats import canonical as c
from chats.formats.openai_messages import rebuilds_as_received
from chats.ingest.plan_artifacts import plan_artifacts, plan_policy
from chats.ingest.plan_feedback import plan_feedback
from chats.ingest.plans import (
    CALL_TYPE_LIMIT,
    FIRST_USER_TEXT_LIMIT,
    MODEL_NAME_LIMIT,
    NAME_LIMIT,
    ROLE_LIMIT,
    SUMMARY_FIELDS,
    TITLE_LIMIT,
    USER_LIMIT,
    WORKFLOW_LIMIT,
    ArtifactRow,
    CallRow,
    Change,
    Creation,
    MessageRow,
    Plan,
    Stored,
    new_index,
    new_ref,
)

# Formats whose messages form one chain with no ids of their own (design notes §3, rule 4).
LINEAR_FORMATS = frozenset({"openai", "chat_document", "record_qa", "chat_history"})


# --------------------------------------------------------------------------------------------------------------
# What the document means


def conversation_fields(parsed: c.Conversation) -> dict[str, Any]:
    """The conversation columns a document sets, cut to their widths."""
    return {
        "title": (parsed.title or "")[:TITLE_LIMIT],
        "user_external_id": (parsed.user_id or "")[:USER_LIMIT],
        "model_name": (parsed.model_name or "")[:MODEL_NAME_LIMIT],
        "model_config": parsed.model,
        "started_at": parsed.started_at,
        "ended_at": parsed.ended_at,
        "scenario": parsed.scenario,
        "injection_context": parsed.injection_context,
        "context_pairs": parsed.context_pairs,
        "metadata": parsed.metadata,
        "original_times": parsed.original_times,
    }


def workflow_of(scenario: object) -> str:
    """The workflow a scenario names: of an object, its ``workflow``, else its ``name`` (the first that is a
    string); a string scenario is itself the name. "" when it names none, or one longer than WORKFLOW_LIMIT (the
    column's width: a longer value could not be matched exactly)."""
    if isinstance(scenario, dict):
        named = next((scenario[key] for key in ("workflow", "name") if isinstance(scenario.get(key), str)), "")
    else:
        named = scenario if isinstance(scenario, str) else ""
    named = named.strip()
    return named if len(named) <= WORKFLOW_LIMIT else ""


def plan_document(
    parsed: c.Conversation,
    stored: Stored | None,
    *,
    external_id: str,
    external_id_generated: bool = False,
    now: datetime,
) -> Plan:
    """What storing `parsed` into `stored` (None: a new conversation) at the time `now` writes. Raises c.ParseError
    when a message's parent is in neither the document nor the conversation."""
    return _Planner(parsed, stored).plan(external_id, external_id_generated, now)


_EMPTY: tuple[Any, ...] = (None, "", [], {})


class _Planner:
    def __init__(self, parsed: c.Conversation, stored: Stored | None) -> None:
        self.parsed = parsed
        self.stored = stored
        # A conversation keeps the format it first arrived in (its exports give the original back).
        self.conversation_format = stored.input_format if stored is not None else parsed.format
        self.warnings: list[dict[str, str]] = []
        messages = stored.messages if stored is not None else []
        self.stored_by_pk = {m.pk: m for m in messages}
        self.by_key = {m.key: m.pk for m in messages}
        self.by_alias: dict[str, int] = {}
        self.by_content: dict[uuid.UUID, int] = {}
        for m in messages:
            for alias in m.aliases:
                self.by_alias.setdefault(alias, m.pk)
            if m.content_key is not None:
                self.by_content.setdefault(m.content_key, m.pk)
        self.children: dict[int | None, int] = {}
        for m in messages:
            self.children[m.parent] = self.children.get(m.parent, 0) + 1
        self.max_position = max((m.position for m in messages), default=-1)
        self.rows: list[MessageRow] = []
        self.ref_of: dict[str, int] = {}  # the document's message key -> ref

    # --- helpers over refs ---------------------------------------------------------------------------------

    def _content_key(self, ref: int | None) -> uuid.UUID | None:
        if ref is None:
            return None
        if ref < 0:
            return self.rows[new_index(ref)].content_key
        return self.stored_by_pk[ref].content_key

    def _depth(self, ref: int | None) -> int:
        if ref is None:
            return -1
        return self.rows[new_index(ref)].depth if ref < 0 else self.stored_by_pk[ref].depth

    def _parent(self, ref: int) -> int | None:
        return self.rows[new_index(ref)].parent if ref < 0 else self.stored_by_pk[ref].parent

    def _key(self, ref: int) -> str:
        return self.rows[new_index(ref)].key if ref < 0 else self.stored_by_pk[ref].key

    def _has_ids(self, ref: int) -> bool:
        return bool(self.rows[new_index(ref)].aliases if ref < 0 else self.stored_by_pk[ref].aliases)

    # --- the plan --------------------------------------------------------------------------------------------

    def plan(self, external_id: str, generated: bool, now: datetime) -> Plan:
        parsed, stored = self.parsed, self.stored
        if stored is not None and stored.input_format != parsed.format:
            self.warnings.append(
                {
                    "path": "",
                    "message": f"conversation was stored as {stored.input_format}; this document is {parsed.format}",
                }
            )
        aliases = self._match_messages()
        calls, call_results, call_ref_by_id = self._plan_calls()
        artifacts, resolved = plan_artifacts(parsed, stored, call_ref_by_id, calls)
        feedback, updates, withdrawn, feedback_delta = plan_feedback(parsed, stored, self.ref_of)
        leaf_key, path_on, path_off = self._plan_active_path()

        fields = conversation_fields(parsed)
        before: dict[str, Any] | None = None
        if stored is None:
            changed_fields = fields
        else:
            before = {name: stored.summary[name] for name in _AUDITED_SUMMARY} | {
                "active_leaf_key": stored.active_leaf_key
            }
            changed_fields = {
                name: value
                for name, value in fields.items()
                if value not in _EMPTY and stored.fields.get(name) != value
            }
            for name in changed_fields:
                before[name] = stored.fields.get(name)

        # The context in force once this document is stored: the one it brings, else the stored one.
        context_changed = stored is None or "injection_context" in changed_fields
        context = (
            changed_fields["injection_context"]
            if context_changed or stored is None
            else stored.fields.get("injection_context")
        )
        verdicts, context_ids, violation = plan_policy(stored, context, context_changed, artifacts, resolved)
        if before is not None and stored is not None and violation != stored.summary.get("policy_violation"):
            before["policy_violation"] = stored.summary.get("policy_violation")

        scenario = (
            changed_fields["scenario"]
            if "scenario" in changed_fields or stored is None
            else stored.fields.get("scenario")
        )
        summary = self._summary(calls, artifacts, feedback_delta, violation, workflow_of(scenario))
        changed = bool(
            self.rows
            or changed_fields
            or leaf_key is not None
            or feedback
            or updates
            or withdrawn
            or aliases
            or call_results
            or resolved
            or verdicts
            or context_ids is not None
            or (before is not None and "policy_violation" in before)
        )
        if stored is None:
            change = Change.CREATED
        elif not changed:
            change = Change.UNCHANGED
        elif summary["branch_count"] > stored.summary["branch_count"]:
            change = Change.BRANCHED
        elif self.rows:
            change = Change.APPENDED
        else:
            change = Change.UPDATED
        creation = None
        if stored is None:
            creation = Creation(uuid=uuid.uuid4(), last_activity_at=parsed.started_at or now)
        return Plan(
            change=change,
            creation=creation,
            external_id=external_id,
            external_id_generated=generated,
            fields=changed_fields,
            before=before,
            summary=summary,
            active_leaf_key=leaf_key,
            messages=self.rows,
            calls=calls,
            artifacts=artifacts,
            feedback=feedback,
            feedback_updates=updates,
            feedback_withdrawn=withdrawn,
            aliases=aliases,
            call_results=call_results,
            resolved_artifacts=resolved,
            verdicts=verdicts,
            context_ids=context_ids,
            path_on=path_on,
            path_off=path_off,
            warnings=self.warnings,
        )

    def _match_messages(self) -> dict[int, list[str]]:
        """Match each message of the document to a stored one, or plan it as new; return new aliases."""
        parsed, stored = self.parsed, self.stored
        linear = parsed.format in LINEAR_FORMATS
        new_aliases: dict[int, list[str]] = {}
        parsed_content: dict[str, uuid.UUID | None] = {}
        new_by_content: dict[uuid.UUID, int] = {}
        for message in parsed.messages:
            parent_ref: int | None = None
            if message.parent_key is not None:
                parent_ref = self.ref_of.get(message.parent_key)
                if parent_ref is None:
                    raise c.ParseError(
                        [c.Issue(message.source_path, f"parent {message.parent_key!r} is not in the conversation")]
                    )
            elif linear and stored is not None and stored.messages and not self.ref_of:
                parent_ref = self._continuation_parent(message)
            # The parser's content key holds where the parent stored is the parent it was computed under.
            parent_content = self._content_key(parent_ref)
            expected_parent = parsed_content.get(message.parent_key) if message.parent_key is not None else None
            parsed_content[message.key] = message.content_key
            if message.content_key is not None and parent_content == expected_parent:
                content = message.content_key
            else:
                content = c.content_key(parent_content, message)

            match = self.by_key.get(message.key)
            if match is None and message.input_id:
                match = self.by_alias.get(message.input_id)
            if match is None:
                candidate = self.by_content.get(content)
                if candidate is None:
                    candidate = new_by_content.get(content)
                # By content only where the two sides do not both carry ids of their own (then the ids decide).
                if candidate is not None and not (message.input_id and self._has_ids(candidate)):
                    match = candidate
            if match is not None:
                self.ref_of[message.key] = match
                if message.input_id and match >= 0:
                    known = new_aliases.get(match, self.stored_by_pk[match].aliases)
                    if message.input_id not in known:
                        new_aliases[match] = [*known, message.input_id]
                continue

            depth = self._depth(parent_ref) + 1
            sibling_index = self.children.get(parent_ref, 0)
            self.children[parent_ref] = sibling_index + 1
            ref = new_ref(len(self.rows))
            self.rows.append(
                MessageRow(
                    message=message,
                    key=message.key,
                    parent=parent_ref,
                    position=self.max_position + 1 + len(self.rows),
                    depth=depth,
                    sibling_index=sibling_index,
                    content_key=content,
                    aliases=[message.input_id] if message.input_id else [],
                    raw=None if rebuilds_as_received(message, self.conversation_format) else message.raw,
                    role=message.role[:ROLE_LIMIT],
                    name=(message.name or "")[:NAME_LIMIT],
                    recipient=(message.recipient or "")[:NAME_LIMIT],
                )
            )
            self.ref_of[message.key] = ref
            new_by_content.setdefault(content, ref)
        return new_aliases

    def _continuation_parent(self, root: c.Message) -> int | None:
        """Rule 4: a linear document whose first message is not stored continues after the active leaf."""
        assert self.stored is not None
        if root.key in self.by_key or self.by_content.get(root.content_key or uuid.UUID(int=0)) is not None:
            return None  # it shares its first message: matched as usual
        leaf = self.by_key.get(self.stored.active_leaf_key)
        if leaf is None:
            leaf = max(self.stored.messages, key=lambda m: m.position).pk
        self.warnings.append(
            {
                "path": root.source_path,
                "message": "the document shares no message with the stored conversation; "
                "it continues the conversation after its active message",
            }
        )
        return leaf

    def _plan_calls(self) -> tuple[list[CallRow], dict[int, int], dict[str, int]]:
        stored_calls = self.stored.calls if self.stored is not None else []
        answered_by: dict[str, int] = {}
        for message in self.parsed.messages:
            if message.tool_call_id and message.tool_call_id not in answered_by:
                answered_by[message.tool_call_id] = self.ref_of[message.key]
        seen = {call.call_id for call in stored_calls}
        call_ref_by_id = {call.call_id: call.pk for call in stored_calls}
        rows: list[CallRow] = []
        for index, row in enumerate(self.rows):
            for call in row.message.tool_calls:
                call_id = call.call_id
                if call_id in seen:
                    # The same id again in another message (a regenerated branch): keep both, told apart.
                    call_id = f"{call.call_id}@{row.key}"
                    suffix = 1
                    while call_id in seen:
                        suffix += 1
                        call_id = f"{call.call_id}@{row.key}#{suffix}"
                    self.warnings.append(
                        {
                            "path": row.message.source_path,
                            "message": f"tool call id {call.call_id!r} repeats an earlier call; stored as {call_id!r}",
                        }
                    )
                seen.add(call_id)
                call_ref_by_id.setdefault(call_id, new_ref(len(rows)))
                rows.append(
                    CallRow(
                        message=new_ref(index),
                        call_id=call_id,
                        call=call,
                        result=answered_by.get(call.call_id),
                        type=call.type[:CALL_TYPE_LIMIT],
                        name=call.name[:NAME_LIMIT],
                    )
                )
        # A call stored unanswered earlier, answered by a message that arrived now.
        late = {
            call.pk: answered_by[call.call_id]
            for call in stored_calls
            if call.result is None and call.call_id in answered_by
        }
        # Tool results that answer no call at all are flagged, not rejected.
        known = seen | {call.call_id for m in self.parsed.messages for call in m.tool_calls}
        for row in self.rows:
            if row.message.tool_call_id and row.message.tool_call_id not in known:
                row.is_orphan_result = True
        return rows, late, call_ref_by_id

    def _plan_active_path(self) -> tuple[str | None, list[int], list[int]]:
        """The active path: the input's own choice when it makes one (current_node), else the newest leaf it sent.

        A document that adds nothing moves it only to a stored leaf: an older snapshot sent again (a retry that
        arrives late) names what is now an inner message, and must not take the thread back to it.
        """
        parsed = self.parsed
        leaf_key = parsed.active_leaf_key or parsed.messages[-1].key
        leaf = self.ref_of.get(leaf_key)
        if leaf is None:
            return None, [], []
        current = self.by_key.get(self.stored.active_leaf_key) if self.stored is not None else None
        if leaf == current:
            return None, [], []
        if not self.rows and not (parsed.active_leaf_key and self.children.get(leaf, 0) == 0):
            return None, [], []
        path: set[int] = set()
        node: int | None = leaf
        while node is not None:
            path.add(node)
            node = self._parent(node)
        for index, row in enumerate(self.rows):
            row.on_active_path = new_ref(index) in path
        stored_messages = self.stored.messages if self.stored is not None else []
        path_on = [m.pk for m in stored_messages if m.pk in path and not m.on_active_path]
        path_off = [m.pk for m in stored_messages if m.on_active_path and m.pk not in path]
        return self._key(leaf), path_on, path_off

    def _summary(
        self,
        calls: list[CallRow],
        artifacts: list[ArtifactRow],
        feedback_delta: tuple[int, int, int],
        policy_violation: bool | None,
        workflow: str,
    ) -> dict[str, Any]:
        stored = self.stored
        base: dict[str, Any] = (
            stored.summary if stored is not None else dict.fromkeys(SUMMARY_FIELDS, 0) | {"first_user_text": ""}
        )
        stored_messages = stored.messages if stored is not None else []
        leaves = sum(1 for m in stored_messages if self.children.get(m.pk, 0) == 0)
        leaves += sum(1 for index in range(len(self.rows)) if self.children.get(new_ref(index), 0) == 0)
        first_user_text = base["first_user_text"]
        if not first_user_text:
            first_user = next((m for m in self.parsed.messages if m.role == "user" and m.text.strip()), None)
            if first_user is not None:
                first_user_text = " ".join(first_user.text.split())[:FIRST_USER_TEXT_LIMIT]
        count, up, down = feedback_delta
        return {
            "message_count": len(stored_messages) + len(self.rows),
            "tool_call_count": base["tool_call_count"] + len(calls),
            "artifact_count": base["artifact_count"] + len(artifacts),
            "branch_count": max(leaves - 1, 0),
            "feedback_count": base["feedback_count"] + count,
            "score_up": base["score_up"] + up,
            "score_down": base["score_down"] + down,
            "first_user_text": first_user_text,
            "policy_violation": policy_violation,
            "workflow": workflow,
        }


# The summary values an ingestion's audit event shows before and after.
_AUDITED_SUMMARY = ("message_count", "branch_count", "feedback_count", "score_up", "score_down")


def audited_state(summary: dict[str, Any], active_leaf_key: str) -> dict[str, Any]:
    return {name: summary[name] for name in _AUDITED_SUMMARY} | {"active_leaf_key": active_leaf_key}
