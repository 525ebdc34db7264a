"""Messages form a tree: the active path, siblings and depth on a branching conversation."""

from __future__ import annotations

from typing import Any

import pytest

from chats.models import Conversation, Message
from chats.selectors.threads import BranchPoint, Thread, thread_read
from chats.services.branches import message_set_active_branch
from chats.services.ingestion import conversation_ingest

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
