"""The planner on its own: what a document means against what is stored, without a database.

`apply` below keeps a stored snapshot in memory the way a writer would store a plan, so that properties can be
checked over many documents: plan, apply, plan again gives "unchanged"; a prefix gives "unchanged"; an extension
gives exactly the new messages; the policy verdicts after a resend are those of the document planned afresh.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chats import ingest
from chats.formats import canonical as c
from chats.ingest import identity, planner
from chats.ingest.plans import (
    Change,
    Creation,
    Outcome,
    Plan,
    Stored,
    StoredArtifact,
    StoredCall,
    StoredFeedback,
    StoredMessage,
    new_index,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def parse(document: Any) -> c.Conversation:
    parsed = ingest.parse_document(document)
    identity.assign_content_keys(parsed)
    return parsed


def plan(document: Any, stored: Stored | None) -> Plan:
    return planner.plan_document(parse(document), stored, external_id="conversation", now=NOW)


def apply(result: Plan, stored: Stored | None, input_format: str) -> Stored:
    """What a writer stores for a plan, as the snapshot the planner reads next time."""
    if stored is None:
        stored = Stored(
            pk=1, external_id=result.external_id, input_format=input_format, active_leaf_key="", fields={}, summary={}
        )
    stored = dataclasses.replace(
        stored,
        messages=list(stored.messages),
        calls=list(stored.calls),
        feedback=[f for f in stored.feedback if f not in result.feedback_withdrawn],
        artifacts=[
            dataclasses.replace(
                a,
                resolved=a.resolved or a.pk in result.resolved_artifacts,
                verdict=result.verdicts.get(a.pk, a.verdict),
            )
            for a in stored.artifacts
        ],
    )
    first = max((m.pk for m in stored.messages), default=0) + 1
    ids = [first + index for index in range(len(result.messages))]

    def resolve(ref: int | None) -> int | None:
        return None if ref is None else ids[new_index(ref)] if ref < 0 else ref

    on_path = set(result.path_on)
    off_path = set(result.path_off)
    stored.messages = [
        dataclasses.replace(
            m,
            aliases=result.aliases.get(m.pk, m.aliases),
            on_active_path=(m.on_active_path or m.pk in on_path) and m.pk not in off_path,
        )
        for m in stored.messages
    ]
    for pk, row in zip(ids, result.messages, strict=True):
        stored.messages.append(
            StoredMessage(
                pk, row.key, resolve(row.parent), row.depth, row.position, row.role, row.content_key, row.aliases,
                row.on_active_path,
            )
        )  # fmt: skip
    first_call = max((call.pk for call in stored.calls), default=0) + 1
    for offset, call in enumerate(result.calls):
        stored.calls.append(
            StoredCall(first_call + offset, call.call_id, resolve(call.message) or 0, resolve(call.result))
        )
    call_ids = {call.pk: call.call_id for call in stored.calls}
    first_artifact = max((a.pk for a in stored.artifacts), default=0) + 1
    for offset, artifact_row in enumerate(result.artifacts):
        artifact = artifact_row.artifact
        call_id = (
            result.calls[new_index(artifact_row.call)].call_id if artifact_row.call < 0 else call_ids[artifact_row.call]
        )
        stored.artifacts.append(
            StoredArtifact(
                first_artifact + offset,
                call_id,
                artifact.artifact_id,
                artifact.resolved,
                artifact.kind,
                artifact.requested,
                artifact_row.verdict,
            )
        )
    updates = dict(result.feedback_updates)
    stored.feedback = [
        dataclasses.replace(f, score=updates[f.pk].score, comment=updates[f.pk].comment, raw=updates[f.pk].raw)
        if f.pk in updates
        else f
        for f in stored.feedback
    ]
    for feedback_row in result.feedback:
        item = feedback_row.feedback
        stored.feedback.append(
            StoredFeedback(
                len(stored.feedback) + 100,
                resolve(feedback_row.message),
                item.origin,
                item.score,
                item.comment,
                item.raw,
            )
        )
    stored.fields = stored.fields | result.fields
    stored.summary = result.summary
    if result.active_leaf_key is not None:
        stored.active_leaf_key = result.active_leaf_key
    return stored


# --- documents ------------------------------------------------------------------------------------------------

texts = st.sampled_from(["hi", "hello", "why?", "because", "ok", ""])
calls = st.lists(
    st.builds(
        lambda n, name, args: {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}},
        st.integers(0, 3),
        st.sampled_from(["search", "inject_airalogy_protocols"]),
        st.sampled_from(["{}", '{"airalogy_protocol_ids": ["airalogy.id.protocol.x"]}', "{oops"]),
    ),
    max_size=2,
)
messages = st.one_of(
    st.builds(lambda text: {"role": "user", "content": text}, texts),
    st.builds(lambda text: {"role": "assistant", "content": text}, texts),
    st.builds(lambda text, tool_calls: {"role": "assistant", "content": text, "tool_calls": tool_calls}, texts, calls),
    st.builds(lambda text, n: {"role": "tool", "tool_call_id": f"call_{n}", "content": text}, texts, st.integers(0, 3)),
)
histories = st.lists(messages, min_size=1, max_size=8)


def chat_document(history: list[dict[str, Any]], scores: list[int] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"chat_id": "conversation", "main_messages": history}
    if scores is not None:
        document["human_feedback"] = [{"score": score} for score in scores]
    return document


@given(histories)
def test_plan_apply_and_plan_again_changes_nothing(history: list[dict[str, Any]]) -> None:
    first = plan(history, None)
    stored = apply(first, None, "openai")

    again = plan(history, stored)

    assert first.outcome == "created" and first.messages_added == len(history)
    assert again.outcome == "unchanged" and again.messages_added == 0
    assert (first.change, again.change) == (Change.CREATED, Change.UNCHANGED)
    assert again.creation is None


@given(histories, st.integers(1, 8))
def test_a_prefix_changes_nothing(history: list[dict[str, Any]], length: int) -> None:
    stored = apply(plan(history, None), None, "openai")

    prefix = plan(history[:length], stored)

    assert prefix.outcome == "unchanged" and prefix.messages == []


@given(histories, histories)
def test_an_extension_adds_exactly_the_new_messages(history: list[dict[str, Any]], more: list[dict[str, Any]]) -> None:
    stored = apply(plan(history, None), None, "openai")

    extended = plan(history + more, stored)

    assert extended.outcome == "updated" and extended.change is Change.APPENDED
    assert [row.message.raw for row in extended.messages] == more
    assert [row.depth for row in extended.messages] == list(range(len(history), len(history) + len(more)))
    assert all(row.on_active_path for row in extended.messages)
    assert extended.summary["message_count"] == len(history) + len(more)


@given(histories, histories)
def test_the_same_history_in_another_format_adds_nothing(history: list[dict[str, Any]], more: list[Any]) -> None:
    stored = apply(plan(history, None), None, "openai")

    as_history = plan({"chat_history": history}, stored)
    as_document = plan(chat_document(history + more), stored)

    assert as_history.messages == []
    assert [row.message.raw for row in as_document.messages] == more


@given(histories, st.data())
def test_a_document_that_differs_after_some_message_branches_there(history: list[dict[str, Any]], data: Any) -> None:
    stored = apply(plan(history, None), None, "openai")
    keep = data.draw(st.integers(1, len(history)))
    other = [*history[:keep], {"role": "user", "content": "a question nobody asked before"}]

    branched = plan(other, stored)

    [row] = branched.messages
    assert row.depth == keep and row.on_active_path
    assert branched.summary["branch_count"] == (0 if keep == len(history) else 1)
    # The planner says which: a new leaf beside the stored one branches, one after it appends.
    assert branched.change is (Change.APPENDED if keep == len(history) else Change.BRANCHED)
    assert branched.outcome is Outcome.UPDATED
    # Nothing stored is deleted: the old leaf leaves the active path, and stays.
    if keep < len(history):
        assert branched.path_off and branched.summary["message_count"] == len(history) + 1


@given(histories.filter(lambda h: len(h) >= 2), st.data())
def test_imported_feedback_follows_the_latest_document(history: list[dict[str, Any]], data: Any) -> None:
    scores = data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=len(history), max_size=len(history)))
    later = data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=len(history), max_size=len(history)))
    first = plan(chat_document(history, scores), None)
    stored = apply(first, None, "chat_document")

    second = plan(chat_document(history, later), stored)
    stored = apply(second, stored, "chat_document")

    stored_scores = [f.score for f in stored.feedback]
    assert None not in stored_scores  # every imported feedback row carries a score
    assert sorted(score for score in stored_scores if score is not None) == sorted(score for score in later if score)
    assert second.summary["score_up"] == later.count(1) and second.summary["score_down"] == later.count(-1)
    assert (second.outcome == "unchanged") == (scores == later)
    assert second.change is (Change.UNCHANGED if scores == later else Change.UPDATED)


def test_a_linear_document_sharing_nothing_continues_after_the_active_leaf() -> None:
    stored = apply(plan(chat_document([{"role": "user", "content": "hi"}]), None), None, "chat_document")

    result = plan(chat_document([{"role": "assistant", "content": "hello"}]), stored)

    [row] = result.messages
    assert row.parent == stored.messages[0].pk and row.depth == 1
    assert [w["message"] for w in result.warnings] == [
        "the document shares no message with the stored conversation; "
        "it continues the conversation after its active message"
    ]


def test_tree_nodes_with_ids_of_their_own_are_not_merged_by_content() -> None:
    def graph(*nodes: tuple[str, str | None, str]) -> dict[str, Any]:
        return {
            "conversation_id": "conversation",
            "nodes": [
                {"node_id": i, "parent_id": p, "message": {"author": {"role": "user"}, "content": {"parts": [t]}}}
                for i, p, t in nodes
            ],
        }

    stored = apply(plan(graph(("a", None, "hi"), ("b", "a", "again")), None), None, "chat_graph")

    regenerated = plan(graph(("a", None, "hi"), ("c", "a", "again")), stored)

    # Same text, but both sides carry their own ids and they differ: a second child, not the same message.
    [row] = regenerated.messages
    assert row.key == "c" and regenerated.summary["branch_count"] == 1


# --- the policy verdicts ----------------------------------------------------------------------------------------

PROTOCOL = "airalogy.id.protocol.x"  # the id the generated injection calls name
policy_contexts = st.fixed_dictionaries(
    {},
    optional={
        "inject_airalogy_protocols": st.fixed_dictionaries(
            {"enabled": st.booleans()},
            optional={"airalogy_protocol_ids": st.lists(st.sampled_from([PROTOCOL, "airalogy.id.protocol.y"]))},
        )
    },
)


def record_qa(history: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    return {"chat_id": "conversation", "context": context, "main_messages": history}


def verdicts_of(stored: Stored) -> list[tuple[str, str, str | None]]:
    return sorted((a.call_id, a.artifact_id, a.verdict) for a in stored.artifacts)


@given(histories, policy_contexts)
def test_a_record_qa_plan_carries_its_verdicts_and_planning_it_again_changes_nothing(
    history: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    first = plan(record_qa(history, context), None)
    stored = apply(first, None, "record_qa")

    again = plan(record_qa(history, context), stored)

    assert None not in [row.verdict for row in first.artifacts]
    assert first.summary["policy_violation"] == any(row.verdict != "permitted" for row in first.artifacts)
    assert again.outcome == "unchanged" and again.verdicts == {} and again.context_ids is None


@given(histories, histories, policy_contexts, policy_contexts)
def test_a_resend_under_another_context_judges_every_injection_as_a_fresh_ingestion_would(
    history: list[dict[str, Any]], more: list[dict[str, Any]], context: dict[str, Any], later: dict[str, Any]
) -> None:
    first = plan(record_qa(history, context), None)
    stored = apply(first, None, "record_qa")

    resent = plan(record_qa(history + more, later), stored)
    stored = apply(resent, stored, "record_qa")

    # `later` replaces the stored context unless it is empty ({} is no statement: the stored one stays).
    fresh_plan = plan(record_qa(history + more, later if later else context), None)
    fresh = apply(fresh_plan, None, "record_qa")
    assert verdicts_of(stored) == verdicts_of(fresh)
    listed = resent.context_ids if resent.context_ids is not None else first.context_ids
    assert set(listed or []) == set(fresh_plan.context_ids or [])
    assert stored.summary["policy_violation"] == fresh.summary["policy_violation"]


def test_a_conversation_without_a_context_has_no_verdicts() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "inject_airalogy_protocols", "arguments": "{}"}}
    history: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"id": "p"}'},
    ]

    result = plan(chat_document(history), None)

    assert [row.verdict for row in result.artifacts] == [None]
    assert result.summary["policy_violation"] is None and result.context_ids is None


def test_a_new_conversation_gets_its_starting_values_from_the_planner() -> None:
    started = datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC)
    dated = plan(chat_document([{"role": "user", "content": "hi"}]) | {"start_time": started.isoformat()}, None)
    undated = plan([{"role": "user", "content": "hi"}], None)

    assert dated.creation is not None and undated.creation is not None
    assert undated.creation == Creation(uuid=undated.creation.uuid, last_activity_at=NOW)
    assert undated.creation.review_status == "unreviewed"
    assert dated.creation.last_activity_at == started and dated.creation.uuid != undated.creation.uuid


def test_the_outcomes_offer_django_choices_without_django() -> None:
    assert Outcome.values == ["queued", "created", "updated", "unchanged", "rejected"]
    assert Outcome.choices[0] == ("queued", "Queued")
    assert [change.outcome for change in Change] == ["created", "updated", "updated", "updated", "unchanged"]
