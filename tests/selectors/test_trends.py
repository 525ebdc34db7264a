"""The Trends figures (chats/selectors/trends.py) against the same counts computed directly from the rows, for
random data on PostgreSQL; and every point selects, through the conversation list's own filters, exactly the
conversations it counts."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from typing import Any

import pytest
from django.http import QueryDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chats.filters.conversations import ConversationFilter
from chats.models import (
    ArtifactKind,
    Conversation,
    Feedback,
    FeedbackOrigin,
    InjectedArtifact,
    InputFormat,
    Message,
    Score,
    Source,
    ToolCall,
)
from chats.selectors.trends import (
    Comparison,
    Rate,
    aligned_range,
    trends_read,
    two_proportion_p,
    wilson,
)
from chats.services.trend_rollups import trends_rollup
from chats.views.trends import list_url

pytestmark = pytest.mark.django_db

FIRST = dt.date(2026, 3, 2)  # a Monday
MODELS = ["gpt-4o", "claude", ""]
WORKFLOWS = ["triage", "qa", ""]
TOOLS = ["search", "fetch"]
KINDS = [ArtifactKind.PROTOCOL.value, ArtifactKind.RECORD.value]

CONVERSATION = st.fixed_dictionaries(
    {
        "day": st.integers(min_value=-3, max_value=24),  # some before and after the range
        "hour": st.integers(min_value=0, max_value=23),
        "source": st.integers(min_value=0, max_value=1),
        "model": st.sampled_from(MODELS),
        "workflow": st.sampled_from(WORKFLOWS),
        "scores": st.lists(st.sampled_from([Score.UP, Score.DOWN, Score.NEUTRAL, None]), max_size=3),
        "calls": st.lists(
            st.tuples(st.sampled_from(TOOLS), st.booleans(), st.booleans()), max_size=3
        ),  # (tool, answered, arguments valid)
        "orphan": st.booleans(),
        "violation": st.sampled_from([None, True, False]),
        "kinds": st.lists(st.sampled_from(KINDS), max_size=2),
    }
)


def _store(spec: dict[str, Any], sources: list[Source]) -> Conversation:
    external = uuid.uuid4().hex
    when = dt.datetime.combine(FIRST + dt.timedelta(days=spec["day"]), dt.time(spec["hour"]), tzinfo=dt.UTC)
    conversation = Conversation.objects.create(
        source=sources[spec["source"]],
        external_id=external,
        external_id_digest=Conversation.digest_of(external),
        input_format=InputFormat.OPENAI,
        model_name=spec["model"],
        workflow=spec["workflow"],
        policy_violation=spec["violation"],
        last_activity_at=when,
        message_count=2 + len(spec["calls"]),
    )
    message = Message.objects.create(conversation=conversation, key="m0", position=0, depth=0, role="assistant")
    for number, (tool, answered, valid) in enumerate(spec["calls"]):
        result = None
        if answered:
            result = Message.objects.create(
                conversation=conversation, key=f"r{number}", position=number + 1, depth=1, role="tool"
            )
        call = ToolCall.objects.create(
            conversation=conversation,
            message=message,
            call_id=f"c{number}",
            name=tool,
            arguments="{}" if valid else "{",
            arguments_error="" if valid else "not JSON",
            result_message=result,
        )
        if number == 0:
            for index, kind in enumerate(spec["kinds"]):
                InjectedArtifact.objects.create(
                    conversation=conversation,
                    message=message,
                    tool_call=call,
                    kind=kind,
                    artifact_id=f"{kind}-{index}",
                    tool_name=tool,
                    requested=True,
                )
    if spec["orphan"]:
        Message.objects.create(
            conversation=conversation, key="orphan", position=99, depth=1, role="tool", is_orphan_result=True
        )
    origins = [FeedbackOrigin.MASTERBRAIN, FeedbackOrigin.CHATGPT, FeedbackOrigin.OPENWEBUI]
    for origin, score in zip(origins, spec["scores"], strict=False):
        Feedback.objects.create(conversation=conversation, message=message, origin=origin, score=score)
    return conversation


def _bucket(day: dt.date, weekly: bool) -> dt.date:
    return day - dt.timedelta(days=day.weekday()) if weekly else day


def _listed(url: str) -> int:
    query = QueryDict(url.split("?", 1)[1])
    filterset = ConversationFilter(query, queryset=Conversation.objects.all())
    assert filterset.is_valid(), filterset.errors
    count: int = filterset.qs.count()
    return count


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(CONVERSATION, max_size=14), weekly=st.booleans())
def test_the_figures_are_the_counts_of_the_rows_and_each_point_lists_exactly_them(
    specs: list[dict[str, Any]], weekly: bool
) -> None:
    gone = list(Conversation.objects.values_list("pk", flat=True))  # the previous example's
    Conversation.objects.all().delete()
    sources = [Source.objects.get_or_create(name=name)[0] for name in ("alpha", "beta")]
    stored = [_store(spec, sources) for spec in specs]
    # What the writes' post-commit step does; the deleted conversations' days are recomputed too.
    trends_rollup(gone + [conversation.pk for conversation in stored])
    span = aligned_range(FIRST, FIRST + dt.timedelta(days=20), "week" if weekly else "day")
    trends = trends_read(span)
    figures = {figure.key: figure for figure in trends.figures}

    # The same counts, computed from the rows in Python.
    expected: dict[str, dict[tuple[str, dt.date], int]] = defaultdict(lambda: defaultdict(int))
    scored: dict[str, dict[tuple[str, dt.date], int]] = defaultdict(lambda: defaultdict(int))
    since, until = span.bounds()
    for conversation in Conversation.objects.select_related("source"):
        if not since <= conversation.last_activity_at < until:
            continue
        start = _bucket(conversation.last_activity_at.date(), weekly)
        expected["source"][(conversation.source.name, start)] += 1
        if conversation.model_name:
            expected["model"][(conversation.model_name, start)] += 1
        scores = list(Feedback.objects.filter(conversation=conversation).values_list("score", flat=True))
        if any(score is not None for score in scores):
            for group, name in (
                ("feedback-model", conversation.model_name),
                ("feedback-workflow", conversation.workflow),
            ):
                if name:
                    scored[group][(name, start)] += 1
                    if Score.DOWN in scores:
                        expected[group][(name, start)] += 1
        calls = list(ToolCall.objects.filter(conversation=conversation))
        for tool in {call.name for call in calls if call.result_message_id is None}:
            expected["unanswered"][(tool, start)] += 1
        for tool in {call.name for call in calls if call.arguments_error}:
            expected["invalid-arguments"][(tool, start)] += 1
        if Message.objects.filter(conversation=conversation, is_orphan_result=True).exists():
            expected["orphans"][("Orphan tool results", start)] += 1
        if conversation.policy_violation:
            for kind in set(InjectedArtifact.objects.filter(conversation=conversation).values_list("kind", flat=True)):
                expected["violations"][(kind, start)] += 1

    for key, figure in figures.items():
        found = {
            (series.name, point.start): point.value
            for series in figure.series
            for point in series.points
            if point.value
        }
        assert found == dict(expected[key]), key
        if figure.rate:
            totals = {
                (series.name, point.start): point.of for series in figure.series for point in series.points if point.of
            }
            assert totals == dict(scored[key]), key
        for series in figure.series:
            for point in series.points:
                if point.value:
                    url = list_url(series.filters, point.start, span.bucket_last(point.start))
                    assert _listed(url) == point.value, (key, series.name, point.start)


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson(10, 100) or (0.0, 0.0)
    assert round(low, 4) == 0.0552 and round(high, 4) == 0.1744
    assert wilson(0, 0) is None
    low, high = wilson(0, 10) or (1.0, 1.0)
    assert low == 0.0 and round(high, 4) == 0.2775


def test_a_difference_the_data_cannot_support_is_not_called_one() -> None:
    small = Comparison(Rate("a", 2, 10), Rate("b", 4, 10), two_proportion_p(Rate("a", 2, 10), Rate("b", 4, 10)))
    assert not small.supported
    large = Comparison(
        Rate("a", 200, 1000), Rate("b", 400, 1000), two_proportion_p(Rate("a", 200, 1000), Rate("b", 400, 1000))
    )
    assert large.supported
    assert not Comparison(Rate("a", 0, 0), Rate("b", 3, 9), None).supported
