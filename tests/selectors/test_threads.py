"""The thread of a conversation (chats.selectors.threads): messages form a tree (the active path, siblings and depth
on a branching conversation), read in windows of the path (path_window). The page and its chunks, which show the
windows, are tested in tests/test_views.py; the API's windows in tests/api/test_views.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Message, Source
from chats.selectors.threads import AROUND_BEFORE, WINDOW_SIZE, BranchPoint, Thread, path_window, thread_read
from chats.services.branches import message_set_active_branch
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from tests import factories

pytestmark = pytest.mark.django_db


def node(node_id: str, parent: str | None, role: str, text: str, timestamp: int) -> dict[str, Any]:
    return {
        "node_id": node_id,
        "parent_id": parent,
        "timestamp": timestamp,
        "message": {
            "id": f"m-{node_id}",
            "author": {"role": role, "metadata": {}},
            "content": {"content_type": "text", "parts": [text]},
        },
    }


GRAPH = {
    "conversation_id": "tree-1",
    "nodes": [
        node("q", None, "user", "How do I passage HEK293T cells?", 100),
        node("a1", "q", "assistant", "First answer", 110),
        node("a2", "q", "assistant", "Regenerated answer", 120),
        node("f", "a2", "user", "And the split ratio?", 130),
        node("a3", "q", "assistant", "Third answer", 125),
    ],
}


@pytest.fixture
def conversation(source) -> Conversation:
    conversation = conversation_ingest(source=source, document=GRAPH).conversation
    assert conversation is not None
    return conversation


def keys(thread: Thread) -> list[str]:
    return [item.message.key for item in thread.messages]


def test_the_active_path_runs_from_the_root_to_the_newest_leaf(conversation):
    thread = thread_read(conversation, user=None)

    # f (timestamp 130) is the newest leaf; a1 and a3 are leaves of other branches.
    assert keys(thread) == ["q", "a2", "f"] and thread.on_active_path
    assert set(
        Message.objects.filter(conversation=conversation, on_active_path=True).values_list("key", flat=True)
    ) == {
        "q",
        "a2",
        "f",
    }
    assert conversation.active_leaf_key == "f" and conversation.branch_count == 2


def test_the_branches_at_a_message_are_its_siblings_in_arrival_order(conversation):
    by_key = {item.message.key: item for item in thread_read(conversation, user=None).messages}
    a1, a3 = (Message.objects.get(conversation=conversation, key=key) for key in ("a1", "a3"))

    assert by_key["a2"].branch == BranchPoint(index=2, count=3, previous_id=a1.pk, next_id=a3.pk)
    assert by_key["q"].branch is None and by_key["f"].branch is None
    indexes = Message.objects.filter(conversation=conversation, parent__key="q").order_by("sibling_index")
    assert [(m.key, m.sibling_index) for m in indexes] == [("a1", 0), ("a2", 1), ("a3", 2)]


def test_depth_counts_the_steps_from_the_root(conversation):
    depths = dict(Message.objects.filter(conversation=conversation).values_list("key", "depth"))

    assert depths == {"q": 0, "a1": 1, "a2": 1, "a3": 1, "f": 2}


def test_a_thread_shown_through_another_branch_runs_from_the_root_through_it(conversation):
    a1 = Message.objects.get(conversation=conversation, key="a1")

    thread = thread_read(conversation, user=None, at=a1.pk)

    assert keys(thread) == ["q", "a1"] and not thread.on_active_path
    assert [item.message.depth for item in thread.messages] == [0, 1]


def test_switching_branch_makes_the_path_through_that_message_active(conversation):
    message_set_active_branch(conversation=conversation, message=Message.objects.get(key="a3"))

    conversation.refresh_from_db()
    thread = thread_read(conversation, user=None)
    assert keys(thread) == ["q", "a3"] and thread.on_active_path
    assert conversation.active_leaf_key == "a3"
    assert Message.objects.filter(conversation=conversation, on_active_path=True).count() == 2


# --------------------------------------------------------------------------------------------------------------
# Windows of a long thread

LONG = 300


@pytest.fixture
def long_thread(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=LONG)


def at_depth(conversation: Conversation, depth: int) -> Message:
    return Message.objects.get(conversation=conversation, depth=depth, on_active_path=True)


def test_the_first_window_holds_the_first_messages_and_says_where_the_next_starts(long_thread: Conversation) -> None:
    window = path_window(long_thread, limit=WINDOW_SIZE)

    assert [m.depth for m in window.messages] == list(range(WINDOW_SIZE))
    assert (window.start, window.end, window.total) == (0, WINDOW_SIZE, LONG)
    assert window.next_after == WINDOW_SIZE - 1 and window.on_active_path


def test_a_window_after_a_position_starts_past_it_and_the_last_one_has_no_next(long_thread: Conversation) -> None:
    window = path_window(long_thread, after=99, limit=50)
    assert [m.depth for m in window.messages] == list(range(100, 150)) and window.next_after == 149

    last = path_window(long_thread, after=279, limit=50)
    assert [m.depth for m in last.messages] == list(range(280, LONG)) and last.next_after is None

    beyond = path_window(long_thread, after=10_000, limit=50)
    assert beyond.messages == [] and beyond.next_after is None


def test_a_window_around_a_deep_message_holds_it_with_a_little_before(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 250)

    window = path_window(long_thread, around=deep.pk, limit=40)

    assert window.around == deep.pk and window.start == 250 - AROUND_BEFORE
    assert deep in window.messages and window.end == 250 - AROUND_BEFORE + 40


def test_a_window_around_a_message_near_the_end_is_full(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 280)

    window = path_window(long_thread, around=deep.pk, limit=WINDOW_SIZE)

    assert deep in window.messages and (window.start, window.end) == (LONG - WINDOW_SIZE, LONG)


def test_a_window_around_a_message_of_another_branch_falls_back_to_the_start(source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=5, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=4, on_active_path=False)

    window = path_window(conversation, around=other.pk, limit=2)

    assert window.around is None and window.start == 0 and len(window.messages) == 2


def test_windows_along_another_branch_follow_that_branch(source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=150, branches=2, with_tools=False)
    first, _, newest = Message.objects.filter(conversation=conversation, depth=149).order_by("id")

    around = thread_read(conversation, user=None, at=first.pk, around=first.pk, limit=20)
    assert not around.on_active_path and around.at == first.pk
    assert around.messages[-1].message == first and around.total == 150
    assert around.messages[-1].branch is not None and around.messages[-1].branch.index == 1

    start = thread_read(conversation, user=None, at=first.pk, limit=20)
    assert [item.position for item in start.messages] == list(range(20))
    active = thread_read(conversation, user=None, after=139, limit=20)
    assert active.messages[-1].message == newest and active.messages[-1].branch is not None


def test_a_byte_budget_cuts_a_window_but_keeps_the_message_asked_for(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 200)
    budget = sum(len(m.text) for m in Message.objects.filter(conversation=long_thread, depth__lt=10))

    first = path_window(long_thread, limit=WINDOW_SIZE, byte_budget=budget)
    assert 1 <= len(first.messages) <= 10 and first.end == len(first.messages)

    tiny = path_window(long_thread, around=deep.pk, limit=WINDOW_SIZE, byte_budget=1)
    assert tiny.messages[-1] == deep and tiny.end == 201


# The active path's length, the window's messages, their siblings, tool calls, artifacts, feedback (with authors),
# its labels, the label taxonomy; around a message, its position; along another branch, the tree's skeleton
# instead of the path's length and the siblings.
WINDOW_QUERIES = {"first": 8, "after": 8, "around": 9, "branch": 7}


@pytest.mark.parametrize("kind", WINDOW_QUERIES)
def test_a_window_takes_the_same_queries_whatever_the_thread_size(
    source: Source, reviewer: User, django_assert_num_queries: Any, kind: str
) -> None:
    for size in (8, LONG):
        conversation = factories.make_conversation(source, n_messages=size)
        deep = at_depth(conversation, size - 2)
        for message in (at_depth(conversation, 5), deep):  # feedback in every window below
            feedback_submit(author=reviewer, conversation=conversation, message=message, score=1)
        options = {"first": {}, "after": {"after": 3}, "around": {"around": deep.pk}, "branch": {"at": deep.pk}}
        with django_assert_num_queries(WINDOW_QUERIES[kind]):
            thread = thread_read(conversation, user=reviewer, limit=WINDOW_SIZE, **options[kind])
        assert thread.messages and thread.total == size
