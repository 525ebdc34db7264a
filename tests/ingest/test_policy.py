"""The injection policy on its own (chats.ingest.policy): a Record QA context block against the injections made.

Examples pin each verdict and state; the properties check the rules over many contexts and injections.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chats.formats import canonical as c
from chats.ingest import parse_document
from chats.ingest.injections import id_well_formed
from chats.ingest.policy import (
    KIND_NOT_ENABLED,
    NOT_LISTED,
    PERMITTED,
    REQUESTED_UNRESOLVED,
    UNUSED,
    USED,
    ContextId,
    Verdicts,
    policy_verdicts,
    read_context,
)
from tests.factories.documents import load_fixture

P1 = "airalogy.id.lab.molecular_biology.project.qpcr_validation.protocol.sybr_green_qpcr.v.1.2.0"
P2 = "airalogy.id.protocol.9d1f3b5d-7e9a-4b1c-8d3e-5f7a9b1c3d5e"
R1 = "airalogy.id.record.3f9c2a1e-7b4d-4c8a-9e2f-6a1b5c7d8e90.v.2"
D1 = "airalogy.id.discussion.c2d4e6f8-1a3b-4c5d-9e7f-0a2b4c6d8e1f"
BAD = "airalogy.id.lab.example.protocol.v.0.0.1"  # seed 001's: no project, so not well formed

KEYS = {
    "protocol": ("inject_airalogy_protocols", "airalogy_protocol_ids"),
    "record": ("inject_airalogy_records", "airalogy_record_ids"),
    "discussion": ("inject_airalogy_discussions", "airalogy_discussion_ids"),
    "file": ("inject_airalogy_files", "airalogy_file_ids"),
}


def injected(kind: str, artifact_id: str, *, requested: bool = True, resolved: bool = True) -> c.Artifact:
    return c.Artifact(
        kind=kind,
        artifact_id=artifact_id,
        id_well_formed=id_well_formed(kind, artifact_id),
        tool_call_id="call",
        message_key="m",
        tool_name=f"inject_airalogy_{kind}s",
        requested=requested,
        resolved=resolved,
    )


def judge(context: Any, *injections: c.Artifact) -> Verdicts:
    verdicts = policy_verdicts(read_context(context), list(injections))
    assert verdicts is not None
    return verdicts


def setting(kind: str, enabled: Any, ids: list[Any] | None) -> dict[str, Any]:
    key, list_key = KEYS[kind]
    value: dict[str, Any] = {} if enabled is None else {"enabled": enabled}
    if ids is not None:
        value[list_key] = ids
    return {key: value}


# --- examples ---------------------------------------------------------------------------------------------------


def test_no_context_means_no_verdicts_at_all() -> None:
    assert read_context(None) is None
    assert policy_verdicts(None, [injected("protocol", P1)]) is None


def test_an_enabled_kind_permits_its_listed_ids_and_flags_the_others() -> None:
    verdicts = judge(setting("protocol", True, [P1]), injected("protocol", P1), injected("protocol", P2))

    assert verdicts.artifacts == (PERMITTED, NOT_LISTED)
    assert verdicts.violation


@pytest.mark.parametrize("ids", [[], None], ids=["empty list", "no list"])
def test_an_enabled_kind_that_lists_no_id_permits_any(ids: list[Any] | None) -> None:
    verdicts = judge(setting("protocol", True, ids), injected("protocol", P1), injected("protocol", P2))

    assert verdicts.artifacts == (PERMITTED, PERMITTED)
    assert not verdicts.violation


@pytest.mark.parametrize("enabled", [False, None, "true", 1], ids=["false", "absent", "a string", "a number"])
def test_a_kind_not_enabled_by_a_json_true_permits_nothing_even_listed(enabled: Any) -> None:
    verdicts = judge(setting("protocol", enabled, [P1]), injected("protocol", P1))

    assert verdicts.artifacts == (KIND_NOT_ENABLED,)
    assert verdicts.violation


def test_a_kind_the_context_does_not_name_is_not_enabled() -> None:
    context = setting("protocol", True, [])
    verdicts = judge(context, injected("record", R1), injected("file", "airalogy.id.file.x.csv"))

    assert verdicts.artifacts == (KIND_NOT_ENABLED, KIND_NOT_ENABLED)


@pytest.mark.parametrize("context", [{}, [], "inject everything"], ids=["empty object", "a list", "a string"])
def test_a_context_that_states_no_kind_permits_nothing(context: Any) -> None:
    verdicts = judge(context, injected("protocol", P1))

    assert verdicts.artifacts == (KIND_NOT_ENABLED,)
    assert verdicts.context_ids == ()


def test_the_four_verdicts_and_states_of_one_conversation() -> None:
    context = setting("protocol", True, [P1, P2]) | setting("record", False, [R1]) | setting("discussion", True, [D1])
    verdicts = judge(
        context,
        injected("protocol", P1),  # listed, resolved
        injected("record", R1),  # its kind is disabled
        injected("discussion", "airalogy.id.discussion.00000000-0000-0000-0000-000000000000"),  # not listed
        injected("protocol", P2, resolved=False),  # requested, never resolved
    )

    assert verdicts.artifacts == (PERMITTED, KIND_NOT_ENABLED, NOT_LISTED, PERMITTED)
    assert verdicts.context_ids == (
        ContextId("protocol", P1, True, USED),
        ContextId("protocol", P2, True, REQUESTED_UNRESOLVED),
        ContextId("record", R1, True, USED),
        ContextId("discussion", D1, True, UNUSED),
    )
    assert verdicts.violation


def test_a_listed_id_is_used_only_by_an_injection_of_its_own_kind() -> None:
    verdicts = judge(setting("protocol", True, [P1]) | setting("record", True, []), injected("record", P1))

    assert verdicts.context_ids == (ContextId("protocol", P1, True, UNUSED),)


def test_resolved_without_being_requested_is_used() -> None:
    verdicts = judge(setting("protocol", True, [P1]), injected("protocol", P1, requested=False, resolved=True))

    assert verdicts.context_ids[0].state == USED


def test_recommended_protocols_answer_to_the_protocols_setting() -> None:
    document = load_fixture("record_qa/multi_turn_injections.json")
    parsed = parse_document(document)

    verdicts = judge(parsed.injection_context, *parsed.artifacts)

    by_call = {(a.tool_call_id, a.artifact_id): v for a, v in zip(parsed.artifacts, verdicts.artifacts, strict=True)}
    # recommend_airalogy_protocols brings protocols the context does not list; an uploaded file's kind has no key.
    assert {v for (call, _), v in by_call.items() if call == "call_rec"} == {NOT_LISTED}
    assert by_call[("call_f1", "airalogy.id.file.4b6d8f0a-2c4e-4f6a-8b0c-2d4f6a8b0c2e.csv")] == KIND_NOT_ENABLED
    assert {v for (call, _), v in by_call.items() if call in ("call_p1", "call_r1", "call_d1")} == {PERMITTED}


def test_two_keys_of_one_kind_are_read_together() -> None:
    context = {
        "inject_airalogy_protocols": {"enabled": False, "airalogy_protocol_ids": [P1]},
        "inject_airalogy_protocol": {"enabled": True, "airalogy_protocol_ids": [P2]},
    }

    verdicts = judge(context, injected("protocol", P1), injected("protocol", P2), injected("protocol", BAD))

    assert verdicts.artifacts == (PERMITTED, PERMITTED, NOT_LISTED)


def test_seed_001_is_permitted_and_its_malformed_listed_id_is_flagged_where_it_stands() -> None:
    document = load_fixture("record_qa/seed_protocol_injection.json")
    parsed = parse_document(document)
    policy = read_context(document["context"])
    assert policy is not None

    verdicts = policy_verdicts(policy, parsed.artifacts)

    assert verdicts == Verdicts(artifacts=(PERMITTED,), context_ids=(ContextId("protocol", BAD, False, USED),))
    assert [(issue.path, issue.message) for issue in policy.issues] == [
        ("/context/inject_airalogy_protocols/airalogy_protocol_ids/0", f"'{BAD}' is not a well-formed protocol id")
    ]


def test_listed_values_that_are_not_ids_are_warned_about_and_still_restrict_the_kind() -> None:
    context = {"inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [42, ""], "other_ids": None}}
    policy = read_context(context, "/context")
    assert policy is not None

    verdicts = policy_verdicts(policy, [injected("protocol", P1)])

    assert verdicts is not None and verdicts.artifacts == (NOT_LISTED,) and verdicts.context_ids == ()
    assert [issue.path for issue in policy.issues] == [
        "/context/inject_airalogy_protocols/airalogy_protocol_ids/0",
        "/context/inject_airalogy_protocols/airalogy_protocol_ids/1",
    ]


def test_an_id_listed_twice_is_one_listed_id() -> None:
    verdicts = judge(setting("protocol", True, [P1, P1, P2]))

    assert [item.artifact_id for item in verdicts.context_ids] == [P1, P2]


def test_context_keys_that_name_no_injection_are_not_kinds() -> None:
    verdicts = judge({"scope": "protocol", "user_id": "u1"} | setting("protocol", True, [P1]), injected("record", R1))

    assert verdicts.artifacts == (KIND_NOT_ENABLED,)
    assert [item.artifact_id for item in verdicts.context_ids] == [P1]


# --- properties -------------------------------------------------------------------------------------------------

ID_POOL = [P1, P2, BAD, R1, "airalogy.id.record.x", D1, "x"]
kinds = st.sampled_from(sorted(KEYS))
contexts = st.dictionaries(
    kinds,
    st.tuples(st.sampled_from([True, False, None, "true"]), st.none() | st.lists(st.sampled_from(ID_POOL))),
).map(lambda settings: {k: v for kind, (e, ids) in settings.items() for k, v in setting(kind, e, ids).items()})
injections = st.lists(
    st.builds(
        lambda kind, artifact_id, requested, resolved: injected(
            kind, artifact_id, requested=requested or not resolved, resolved=resolved
        ),
        kinds,
        st.sampled_from(ID_POOL),
        st.booleans(),
        st.booleans(),
    ),
    max_size=8,
)


@given(contexts, injections)
def test_one_verdict_per_injection_and_a_violation_exactly_when_one_is_not_permitted(
    context: dict[str, Any], made: list[c.Artifact]
) -> None:
    verdicts = judge(context, *made)

    assert len(verdicts.artifacts) == len(made)
    assert set(verdicts.artifacts) <= {PERMITTED, KIND_NOT_ENABLED, NOT_LISTED}
    assert verdicts.violation == any(v != PERMITTED for v in verdicts.artifacts)


@given(contexts, injections, st.randoms())
def test_an_injections_verdict_depends_on_it_alone_not_on_the_others(
    context: dict[str, Any], made: list[c.Artifact], random: Any
) -> None:
    shuffled = list(made)
    random.shuffle(shuffled)

    alone = [judge(context, artifact).artifacts[0] for artifact in made]
    together = dict(zip(map(id, shuffled), judge(context, *shuffled).artifacts, strict=True))

    assert [together[id(artifact)] for artifact in made] == alone


@given(contexts, injections)
def test_every_listed_id_appears_once_with_the_well_formedness_rule_of_injected_ids(
    context: dict[str, Any], made: list[c.Artifact]
) -> None:
    verdicts = judge(context, *made)

    kind_of = {key: kind for kind, (key, _) in KEYS.items()}
    listed = [
        (kind_of[key], artifact_id)
        for key, value in context.items()
        for artifact_id in value.get(KEYS[kind_of[key]][1]) or []
    ]
    assert [(item.kind, item.artifact_id) for item in verdicts.context_ids] == list(dict.fromkeys(listed))
    for item in verdicts.context_ids:
        assert item.id_well_formed == id_well_formed(item.kind, item.artifact_id)


@given(contexts, injections)
def test_a_listed_id_is_used_once_resolved_and_unused_until_injected(
    context: dict[str, Any], made: list[c.Artifact]
) -> None:
    verdicts = judge(context, *made)
    for item in verdicts.context_ids:
        mine = [a for a in made if (a.kind, a.artifact_id) == (item.kind, item.artifact_id)]
        if any(a.resolved for a in mine):
            assert item.state == USED
        elif mine:
            assert item.state == REQUESTED_UNRESOLVED
        else:
            assert item.state == UNUSED


@given(contexts, injections)
def test_enabling_a_kind_and_listing_an_injected_id_permits_it(context: dict[str, Any], made: list[c.Artifact]) -> None:
    for artifact in made:
        key, list_key = KEYS[artifact.kind]
        ids = (context.get(key) or {}).get(list_key) or []
        opened = context | {key: {"enabled": True, list_key: [*ids, artifact.artifact_id]}}

        assert judge(opened, artifact).artifacts == (PERMITTED,)


@given(contexts, injections, kinds)
def test_disabling_a_kind_flags_its_injections_and_leaves_the_others_alone(
    context: dict[str, Any], made: list[c.Artifact], kind: str
) -> None:
    key, list_key = KEYS[kind]
    closed = context | {key: {"enabled": False, list_key: (context.get(key) or {}).get(list_key) or []}}

    before, after = judge(context, *made).artifacts, judge(closed, *made).artifacts

    for artifact, was, now in zip(made, before, after, strict=True):
        assert now == (KIND_NOT_ENABLED if artifact.kind == kind else was)
